package robust

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// Violation is one broken invariant, with the objects involved.
type Violation struct {
	Invariant string   `json:"invariant"`
	Message   string   `json:"message"`
	Objects   []string `json:"objects"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s %v", v.Invariant, v.Message, v.Objects)
}

// Bounds are the limits a run holds the history to.
type Bounds struct {
	// QuotaGap is the longest a namespace of a live TeamSpace may be seen
	// without its quota.
	QuotaGap time.Duration
	// ReadyAfterFaults is how soon after the last fault ended every live
	// TeamSpace must be seen Ready.
	ReadyAfterFaults time.Duration
	// MemoryGrowth is how much more each process may hold at the end than
	// at the start, as a factor of its first sample.
	MemoryGrowth float64
}

// Invariant is one named rule of the history.
type Invariant struct {
	Name  string
	Check func(h *History, b Bounds) []Violation
}

// Invariants are every rule a run is held to, in the order they are
// reported.
var Invariants = []Invariant{
	{"one-record-per-deleted-teamspace", oneRecordPerDeletedTeamSpace},
	{"record-before-namespaces", recordBeforeNamespaces},
	{"no-namespace-of-a-live-teamspace-deleted", liveNamespacesKept},
	{"adopted-never-deleted", adoptedNeverDeleted},
	{"quota-gap-bounded", quotaGapBounded},
	{"quotas-within-totals", quotasWithinTotals},
	{"ready-after-faults", readyAfterFaults},
	{"memory-bounded", memoryBounded},
}

// Check runs every invariant over h.
func Check(h *History, b Bounds) []Violation {
	var out []Violation
	for _, inv := range Invariants {
		out = append(out, inv.Check(h, b)...)
	}
	return out
}

// oneRecordPerDeletedTeamSpace: every TeamSpace gone has exactly one
// archive record, by uid (the same record stored again is one).
func oneRecordPerDeletedTeamSpace(h *History, _ Bounds) []Violation {
	keys := map[string]map[string]bool{}
	for _, e := range h.Events {
		if e.Kind == RecordStored {
			if keys[e.UID] == nil {
				keys[e.UID] = map[string]bool{}
			}
			keys[e.UID][e.Key] = true
		}
	}
	var out []Violation
	for _, e := range h.sorted() {
		if e.Kind != TeamSpaceGone {
			continue
		}
		if n := len(keys[e.UID]); n != 1 {
			out = append(out, Violation{"one-record-per-deleted-teamspace",
				fmt.Sprintf("TeamSpace %s (uid %s) is gone with %d archive records", e.TeamSpace, e.UID, n),
				append([]string{"TeamSpace " + e.TeamSpace + " " + e.UID}, slices.Sorted(maps.Keys(keys[e.UID]))...)})
		}
	}
	return out
}

// recordBeforeNamespaces: a namespace of a TeamSpace being deleted began
// to go only after the TeamSpace's record was stored; one removed from a
// live TeamSpace only after its own record was.
func recordBeforeNamespaces(h *History, _ Bounds) []Violation {
	var out []Violation
	for _, e := range h.sorted() {
		if e.Kind != NamespaceDeleting || e.Owner == "" {
			continue
		}
		uid, whose := e.Owner, "its TeamSpace's"
		if _, deleting := h.first(TeamSpaceDeleting, func(d Event) bool { return d.UID == e.Owner && !d.At.After(e.At) }); !deleting {
			uid, whose = e.NamespaceUID, "its own removal"
		}
		stored, ok := h.first(RecordStored, func(r Event) bool { return r.UID == uid })
		if !ok || stored.After(e.At) {
			when := "never"
			if ok {
				when = stored.Format(time.RFC3339Nano)
			}
			out = append(out, Violation{"record-before-namespaces",
				fmt.Sprintf("namespace %s began to go at %s, %s record was stored %s", e.Namespace, e.At.Format(time.RFC3339Nano), whose, when),
				[]string{"Namespace " + e.Namespace + " " + e.NamespaceUID, "record of uid " + uid}})
		}
	}
	return out
}

// liveNamespacesKept: no namespace of a TeamSpace began to go while the
// TeamSpace lived, unless its entry's removal was confirmed before.
func liveNamespacesKept(h *History, _ Bounds) []Violation {
	var out []Violation
	for _, e := range h.sorted() {
		if e.Kind != NamespaceDeleting || e.Owner == "" {
			continue
		}
		if _, deleting := h.first(TeamSpaceDeleting, func(d Event) bool { return d.UID == e.Owner && !d.At.After(e.At) }); deleting {
			continue
		}
		confirmed := e.Entry != ""
		if confirmed {
			_, confirmed = h.first(RemovalConfirmed, func(c Event) bool { return c.UID == e.Owner && c.Entry == e.Entry && !c.At.After(e.At) })
		}
		if !confirmed {
			out = append(out, Violation{"no-namespace-of-a-live-teamspace-deleted",
				fmt.Sprintf("namespace %s (entry %q) began to go at %s while TeamSpace uid %s lived, its removal not confirmed", e.Namespace, e.Entry, e.At.Format(time.RFC3339Nano), e.Owner),
				[]string{"Namespace " + e.Namespace + " " + e.NamespaceUID, "TeamSpace uid " + e.Owner}})
		}
	}
	return out
}

// adoptedNeverDeleted: no namespace a TeamSpace adopted ever began to go.
func adoptedNeverDeleted(h *History, _ Bounds) []Violation {
	adopted := map[string]bool{}
	for _, e := range h.Events {
		if e.Kind == NamespaceSeen && e.Adopted {
			adopted[e.NamespaceUID] = true
		}
	}
	var out []Violation
	for _, e := range h.sorted() {
		if e.Kind == NamespaceDeleting && adopted[e.NamespaceUID] {
			out = append(out, Violation{"adopted-never-deleted",
				fmt.Sprintf("adopted namespace %s began to go at %s", e.Namespace, e.At.Format(time.RFC3339Nano)),
				[]string{"Namespace " + e.Namespace + " " + e.NamespaceUID}})
		}
	}
	return out
}

// QuotaGaps is the longest each namespace was seen without its quota, by
// namespace: from the first sample without it to the next with it, or to
// the namespace's last sample (its TeamSpace deleted, or the run's end).
func QuotaGaps(h *History) map[string]time.Duration {
	gaps, since, last := map[string]time.Duration{}, map[string]time.Time{}, map[string]time.Time{}
	for _, e := range h.sorted() {
		if e.Kind != QuotaSample {
			continue
		}
		last[e.Namespace] = e.At
		start, missing := since[e.Namespace]
		switch {
		case !e.Present && !missing:
			since[e.Namespace] = e.At
		case e.Present && missing:
			gaps[e.Namespace] = max(gaps[e.Namespace], e.At.Sub(start))
			delete(since, e.Namespace)
		}
	}
	for ns, start := range since {
		gaps[ns] = max(gaps[ns], last[ns].Sub(start))
	}
	return gaps
}

// quotaGapBounded: no namespace was without its quota longer than the
// bound (QuotaGaps).
func quotaGapBounded(h *History, b Bounds) []Violation {
	gaps := QuotaGaps(h)
	var out []Violation
	for _, ns := range slices.Sorted(maps.Keys(gaps)) {
		if gaps[ns] > b.QuotaGap {
			out = append(out, Violation{"quota-gap-bounded",
				fmt.Sprintf("namespace %s was without team-quota for %s, more than %s", ns, gaps[ns], b.QuotaGap),
				[]string{"Namespace " + ns}})
		}
	}
	return out
}

// quotasWithinTotals: a team's quotas never held more together than its
// totals asked for at some point: a sum above every total its spec has
// had is a share raised before another was lowered (a move applied out of
// order). A total lowered is met by the quotas a moment later, so a sum
// between the new total and an earlier one is the lag of the change, not
// a violation; the converged state is held to the current totals
// (quotas-within-totals-at-rest). The totals are those the samples saw
// and those the workload wrote (TotalsWritten: the samples' view of the
// TeamSpace may lag their view of its quotas).
func quotasWithinTotals(h *History, _ Bounds) []Violation {
	var out []Violation
	most := map[string]map[string]int64{} // by uid: the largest total seen, by resource
	for _, e := range h.sorted() {
		if e.Kind != TeamQuotas && e.Kind != TotalsWritten {
			continue
		}
		if most[e.UID] == nil {
			most[e.UID] = map[string]int64{}
		}
		for k, v := range e.Totals {
			most[e.UID][k] = max(most[e.UID][k], v)
		}
		if e.Kind == TotalsWritten {
			continue
		}
		for _, k := range slices.Sorted(maps.Keys(e.Sum)) {
			if total, ok := most[e.UID][k]; ok && e.Sum[k] > total {
				out = append(out, Violation{"quotas-within-totals",
					fmt.Sprintf("TeamSpace %s's quotas held %s %d together at %s, more than any total it had (at most %d, now %d)", e.TeamSpace, k, e.Sum[k], e.At.Format(time.RFC3339Nano), total, e.Totals[k]),
					[]string{"TeamSpace " + e.TeamSpace + " " + e.UID}})
			}
		}
	}
	return out
}

// readyAfterFaults: every TeamSpace was Ready within the bound of the
// last fault's end, and stayed so. The samples are a step function (the
// recorder keeps changes, and each object's last value as last seen): a
// TeamSpace not Ready at one sample is taken as not Ready until its next
// Ready sample, or its last sample. A run without faults has nothing to
// recover from.
func readyAfterFaults(h *History, b Bounds) []Violation {
	var end time.Time
	for _, e := range h.Events {
		if e.Kind == FaultInjected && e.Until.After(end) {
			end = e.Until
		}
	}
	if end.IsZero() {
		return nil // no fault: nothing to recover from
	}
	lastNotReady, down, names := map[string]time.Time{}, map[string]bool{}, map[string]string{}
	for _, e := range h.sorted() {
		if e.Kind != ReadySample {
			continue
		}
		names[e.UID] = e.TeamSpace
		switch {
		case !e.Ready():
			lastNotReady[e.UID], down[e.UID] = e.At, true
		case down[e.UID]:
			lastNotReady[e.UID] = e.At // not Ready until this sample
			delete(down, e.UID)
		}
	}
	var out []Violation
	for _, uid := range slices.Sorted(maps.Keys(lastNotReady)) {
		if at := lastNotReady[uid]; at.Sub(end) > b.ReadyAfterFaults {
			out = append(out, Violation{"ready-after-faults",
				fmt.Sprintf("TeamSpace %s was not Ready until %s, %s after the last fault ended, more than %s", names[uid], at.Format(time.RFC3339Nano), at.Sub(end), b.ReadyAfterFaults),
				[]string{"TeamSpace " + names[uid] + " " + uid}})
		}
	}
	return out
}

// memoryBounded: no process held more at its last sample than
// MemoryGrowth times its first.
func memoryBounded(h *History, b Bounds) []Violation {
	first, last := map[string]int64{}, map[string]int64{}
	for _, e := range h.sorted() {
		if e.Kind != MemorySample {
			continue
		}
		if _, ok := first[e.Key]; !ok {
			first[e.Key] = e.Bytes
		}
		last[e.Key] = e.Bytes
	}
	var out []Violation
	for _, p := range slices.Sorted(maps.Keys(first)) {
		if float64(last[p]) > b.MemoryGrowth*float64(first[p]) {
			out = append(out, Violation{"memory-bounded",
				fmt.Sprintf("%s held %d bytes at the end, %.2f times the %d at the start, more than %.2f", p, last[p], float64(last[p])/float64(first[p]), first[p], b.MemoryGrowth),
				[]string{"process " + p}})
		}
	}
	return out
}

// LongestNotReady is the longest any TeamSpace, once seen Ready, was seen
// not Ready until it was Ready again (or the samples ended), and which
// TeamSpace: a fault's cost, or a change's while it is acted on.
func LongestNotReady(h *History) (time.Duration, string) {
	since, wasReady, last, names := map[string]time.Time{}, map[string]bool{}, map[string]time.Time{}, map[string]string{}
	var longest time.Duration
	var who string
	for _, e := range h.sorted() {
		if e.Kind != ReadySample {
			continue
		}
		last[e.UID], names[e.UID] = e.At, e.TeamSpace
		start, down := since[e.UID]
		switch {
		case e.Ready() && down:
			if d := e.At.Sub(start); d > longest {
				longest, who = d, e.TeamSpace
			}
			delete(since, e.UID)
		case !e.Ready() && !down && wasReady[e.UID]:
			since[e.UID] = e.At
		}
		if e.Ready() {
			wasReady[e.UID] = true
		}
	}
	for uid, start := range since { // to its last sample: a TeamSpace deleted meanwhile is not sampled on
		if d := last[uid].Sub(start); d > longest {
			longest, who = d, names[uid]
		}
	}
	return longest, who
}
