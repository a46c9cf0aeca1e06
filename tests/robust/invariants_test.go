package robust

import (
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 12, 7, 6, 0, 0, 0, time.UTC)

// loose are bounds the good history keeps well within.
var loose = Bounds{QuotaGap: time.Minute, ReadyAfterFaults: time.Minute, MemoryGrowth: 2}

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// good is a history every invariant holds for: TeamSpace a deleted (record
// first, then its namespaces), TeamSpace b alive with an entry removed
// after confirmation (its record first) and an adopted namespace released,
// quotas sampled throughout with a 2 s gap.
func good() *History {
	h := &History{}
	for _, e := range []Event{
		{At: at(0), Kind: NamespaceSeen, TeamSpace: "a", UID: "ua", Namespace: "team-a", NamespaceUID: "na", Owner: "ua"},
		{At: at(0), Kind: NamespaceSeen, TeamSpace: "b", UID: "ub", Namespace: "team-b", NamespaceUID: "nb", Owner: "ub"},
		{At: at(0), Kind: NamespaceSeen, TeamSpace: "b", UID: "ub", Namespace: "team-b--dev", NamespaceUID: "nbd", Owner: "ub", Entry: "dev"},
		{At: at(0), Kind: NamespaceSeen, TeamSpace: "b", UID: "ub", Namespace: "legacy", NamespaceUID: "nl", Entry: "legacy", Adopted: true},
		{At: at(1), Kind: QuotaSample, Namespace: "team-b", Present: true},
		{At: at(2), Kind: QuotaSample, Namespace: "team-b", Present: false},
		{At: at(4), Kind: QuotaSample, Namespace: "team-b", Present: true},
		{At: at(5), Kind: TeamSpaceDeleting, TeamSpace: "a", UID: "ua"},
		{At: at(6), Kind: RecordStored, UID: "ua", Key: "a.json"},
		{At: at(6), Kind: RecordStored, UID: "ua", Key: "a.json"}, // stored again: one record
		{At: at(7), Kind: NamespaceDeleting, Namespace: "team-a", NamespaceUID: "na", Owner: "ua"},
		{At: at(9), Kind: TeamSpaceGone, TeamSpace: "a", UID: "ua"},
		{At: at(10), Kind: RemovalConfirmed, TeamSpace: "b", UID: "ub", Entry: "dev"},
		{At: at(11), Kind: RecordStored, UID: "nbd", Key: "team-b--dev.json"},
		{At: at(12), Kind: NamespaceDeleting, Namespace: "team-b--dev", NamespaceUID: "nbd", Owner: "ub", Entry: "dev"},
		{At: at(13), Kind: QuotaSample, Namespace: "team-b", Present: true},
		{At: at(13), Kind: TeamQuotas, TeamSpace: "b", UID: "ub", Totals: map[string]int64{"pods": 4, "requests.cpu": 1000}, Sum: map[string]int64{"pods": 4, "requests.cpu": 1000}},
		{At: at(3), Kind: FaultInjected, Key: string(LeadingEngine), Until: at(8)},
		{At: at(9), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: false},
		{At: at(12), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: true},
		{At: at(0), Kind: MemorySample, Key: "hook-a", Bytes: 100 << 20},
		{At: at(13), Kind: MemorySample, Key: "hook-a", Bytes: 120 << 20},
	} {
		h.Add(e)
	}
	return h
}

func TestGoodHistory(t *testing.T) {
	if v := Check(good(), loose); len(v) > 0 {
		t.Fatalf("violations of a good history: %v", v)
	}
	if g := QuotaGaps(good())["team-b"]; g != 2*time.Second {
		t.Errorf("team-b's longest gap %s, want 2s", g)
	}
	// A total lowered and the quotas a moment behind: the lag of the
	// change, not a violation.
	h0 := good()
	h0.Add(Event{At: at(14), Kind: TeamQuotas, TeamSpace: "b", UID: "ub", Totals: map[string]int64{"pods": 3, "requests.cpu": 1000}, Sum: map[string]int64{"pods": 4, "requests.cpu": 1000}})
	if v := Check(h0, loose); len(v) > 0 {
		t.Errorf("a lowered total's lag taken for a violation: %v", v)
	}
	// A namespace no longer sampled (its TeamSpace deleted) ends its gap
	// at its own last sample, however long others are sampled on.
	h := good()
	h.Add(Event{At: at(20), Kind: QuotaSample, Namespace: "team-c", Present: true})
	h.Add(Event{At: at(21), Kind: QuotaSample, Namespace: "team-c", Present: false})
	h.Add(Event{At: at(23), Kind: QuotaSample, Namespace: "team-c", Present: false})
	h.Add(Event{At: at(90), Kind: QuotaSample, Namespace: "team-b", Present: true})
	if g := QuotaGaps(h)["team-c"]; g != 2*time.Second {
		t.Errorf("team-c's gap %s, want 2s (to its last sample)", g)
	}
}

// TestEachInvariantFails breaks, once each, what one invariant guards,
// and wants that invariant, and only it, to say so.
func TestEachInvariantFails(t *testing.T) {
	for _, c := range []struct {
		invariant, broken string
		bounds            Bounds
		change            func(h *History)
	}{
		{"one-record-per-deleted-teamspace", "a's record never stored", loose, func(h *History) {
			drop(h, func(e Event) bool { return e.Kind == RecordStored && e.UID == "ua" })
			// and its namespace kept, so that only this invariant breaks
			drop(h, func(e Event) bool { return e.Kind == NamespaceDeleting && e.Namespace == "team-a" })
		}},
		{"one-record-per-deleted-teamspace", "a stored twice under two keys", loose, func(h *History) {
			h.Add(Event{At: at(8), Kind: RecordStored, UID: "ua", Key: "a.ua.json"})
		}},
		{"record-before-namespaces", "team-a deleted before a's record (finalize answered before the write)", loose, func(h *History) {
			move(h, func(e Event) bool { return e.Kind == NamespaceDeleting && e.Namespace == "team-a" }, at(5))
		}},
		{"record-before-namespaces", "dev removed before its record", loose, func(h *History) {
			move(h, func(e Event) bool { return e.Kind == RecordStored && e.UID == "nbd" }, at(14))
		}},
		{"no-namespace-of-a-live-teamspace-deleted", "dev removed without confirmation", loose, func(h *History) {
			drop(h, func(e Event) bool { return e.Kind == RemovalConfirmed })
		}},
		{"no-namespace-of-a-live-teamspace-deleted", "team-b deleted while b lives (its record there)", loose, func(h *History) {
			h.Add(Event{At: at(11), Kind: RecordStored, UID: "nb", Key: "team-b.json"})
			h.Add(Event{At: at(12), Kind: NamespaceDeleting, Namespace: "team-b", NamespaceUID: "nb", Owner: "ub"})
		}},
		{"adopted-never-deleted", "legacy deleted", loose, func(h *History) {
			h.Add(Event{At: at(12), Kind: NamespaceDeleting, Namespace: "legacy", NamespaceUID: "nl"})
		}},
		{"quotas-within-totals", "a share moved up before the other down", loose, func(h *History) {
			h.Add(Event{At: at(14), Kind: TeamQuotas, TeamSpace: "b", UID: "ub", Totals: map[string]int64{"pods": 4, "requests.cpu": 1000}, Sum: map[string]int64{"pods": 5, "requests.cpu": 1000}})
		}},
		{"ready-after-faults", "b not Ready 1 s after the last fault, bound 0.5 s", Bounds{QuotaGap: time.Minute, ReadyAfterFaults: 500 * time.Millisecond, MemoryGrowth: 2}, func(*History) {}},
		{"ready-after-faults", "b not Ready from before the end until long after, nothing sampled between (changes only)", loose, func(h *History) {
			drop(h, func(e Event) bool { return e.Kind == ReadySample && e.At.After(at(10)) })
			h.Add(Event{At: at(95), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: true})
		}},
		{"ready-after-faults", "b not Ready again later", loose, func(h *History) {
			h.Add(Event{At: at(90), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: false})
		}},
		{"memory-bounded", "the hook grew 1.2 times, bound 1.1", Bounds{QuotaGap: time.Minute, ReadyAfterFaults: time.Minute, MemoryGrowth: 1.1}, func(*History) {}},
		{"quota-gap-bounded", "team-b without its quota for 2 s, bound 1 s", Bounds{QuotaGap: time.Second, ReadyAfterFaults: time.Minute, MemoryGrowth: 2}, func(*History) {}},
		{"quota-gap-bounded", "team-b without its quota to the end", Bounds{QuotaGap: 5 * time.Second, ReadyAfterFaults: time.Minute, MemoryGrowth: 2}, func(h *History) {
			drop(h, func(e Event) bool { return e.Kind == QuotaSample && e.Present && e.At.After(at(2)) })
			h.Add(Event{At: at(20), Kind: QuotaSample, Namespace: "team-b", Present: false})
		}},
	} {
		t.Run(c.invariant+"/"+c.broken, func(t *testing.T) {
			h := good()
			c.change(h)
			v := Check(h, c.bounds)
			if len(v) == 0 {
				t.Fatal("no violation")
			}
			for _, x := range v {
				if x.Invariant != c.invariant {
					t.Errorf("violation of %s too: %s", x.Invariant, x)
				}
				if len(x.Objects) == 0 || !strings.Contains(x.Message, " ") {
					t.Errorf("a violation that names nothing: %s", x)
				}
			}
		})
	}
}

func drop(h *History, match func(Event) bool) {
	var kept []Event
	for _, e := range h.Events {
		if !match(e) {
			kept = append(kept, e)
		}
	}
	h.Events = kept
}

func move(h *History, match func(Event) bool, to time.Time) {
	for i, e := range h.Events {
		if match(e) {
			h.Events[i].At = to
		}
	}
}

// TestWritesBeforeTheRecorderSawThem: the recorder's watch of TeamSpaces
// may lag its watches of namespaces and quotas (after an API server
// restart each relists on its own): the workload's writes (Writes), at the
// time each was sent, are what the confirmation and the totals were. The
// fault run at 1000 failed on that lag three ways, each replayed here;
// each still fails without the writes, and a deletion or a sum no write
// allowed still fails with them.
func TestWritesBeforeTheRecorderSawThem(t *testing.T) {
	lagged := func() *History {
		h := good()
		for _, e := range []Event{
			// c's entry e2 confirmed (written at 20), its record stored, its
			// namespace deleted at 22; the recorder sees the confirmation at 24
			{At: at(0), Kind: NamespaceSeen, TeamSpace: "c", UID: "uc", Namespace: "team-c--e2", NamespaceUID: "nce", Owner: "uc", Entry: "e2"},
			{At: at(21), Kind: RecordStored, UID: "nce", Key: "team-c--e2.json"},
			{At: at(22), Kind: NamespaceDeleting, Namespace: "team-c--e2", NamespaceUID: "nce", Owner: "uc", Entry: "e2"},
			{At: at(24), Kind: RemovalConfirmed, TeamSpace: "c", UID: "uc", Entry: "e2"},
			// d created and deleted (at 30) while the recorder's watch of
			// TeamSpaces was down: never seen deleting
			{At: at(31), Kind: RecordStored, UID: "ud", Key: "d.json"},
			{At: at(32), Kind: NamespaceDeleting, Namespace: "team-d", NamespaceUID: "nd", Owner: "ud"},
			// e's pods raised to 50 (written at 40); its quotas seen at 50
			// while the TeamSpace is still seen at 8
			{At: at(35), Kind: TeamQuotas, TeamSpace: "e", UID: "ue", Totals: map[string]int64{"pods": 8}, Sum: map[string]int64{"pods": 8}},
			{At: at(41), Kind: TeamQuotas, TeamSpace: "e", UID: "ue", Totals: map[string]int64{"pods": 8}, Sum: map[string]int64{"pods": 50}},
		} {
			h.Add(e)
		}
		return h
	}
	ops := []Op{
		{Sent: at(20), At: at(20), Kind: "remove-entry", TeamSpace: "c", UID: "uc", Detail: "e2"},
		{Sent: at(30), At: at(30), Kind: "delete", TeamSpace: "d", UID: "ud"},
		{Sent: at(40), At: at(40), Kind: "pods", TeamSpace: "e", UID: "ue", Detail: "50", Totals: map[string]int64{"pods": 50}},
		// refused, or not a write the history takes: nothing
		{Sent: at(19), At: at(19), Kind: "remove-entry", TeamSpace: "f", UID: "uf", Detail: "e2", Err: "the server is currently unable to handle the request"},
		{Sent: at(19), At: at(19), Kind: "owners", TeamSpace: "c", UID: "uc", Detail: "user-1-0"},
	}
	if got := Writes(ops); len(got) != 3 {
		t.Errorf("Writes = %v, want the 3 writes taken", got)
	}

	without := names(Check(lagged(), loose))
	for _, want := range []string{"no-namespace-of-a-live-teamspace-deleted", "record-before-namespaces", "quotas-within-totals"} {
		if !strings.Contains(without, want) {
			t.Errorf("without the writes: violations %s, want %s (the lag replayed)", without, want)
		}
	}
	h := lagged()
	for _, e := range Writes(ops) {
		h.Add(e)
	}
	if v := Check(h, loose); len(v) > 0 {
		t.Errorf("with the writes: violations %v", v)
	}

	// What no write allowed still fails: e2's namespace deleted before
	// its confirmation was sent, a sum above every total written.
	h = lagged()
	for _, e := range Writes([]Op{
		{Sent: at(23), At: at(23), Kind: "remove-entry", TeamSpace: "c", UID: "uc", Detail: "e2"},
		{Sent: at(30), At: at(30), Kind: "delete", TeamSpace: "d", UID: "ud"},
		{Sent: at(40), At: at(40), Kind: "pods", TeamSpace: "e", UID: "ue", Totals: map[string]int64{"pods": 49}},
	}) {
		h.Add(e)
	}
	got := names(Check(h, loose))
	for _, want := range []string{"no-namespace-of-a-live-teamspace-deleted", "quotas-within-totals"} {
		if !strings.Contains(got, want) {
			t.Errorf("writes that did not allow it: violations %s, want %s", got, want)
		}
	}
}

// names are the invariants violations name, in order.
func names(v []Violation) string {
	var out []string
	for _, x := range v {
		out = append(out, x.Invariant)
	}
	return strings.Join(out, " ")
}
