// Package robust is what a fault run of the fleet (issue #67) checks: a
// history of what was observed while everything moved and failed, and the
// invariants that must hold of it, each a function of the history alone,
// each failure naming the objects involved. In the manner of etcd's
// robustness tests: the run records, the model judges afterwards, and a
// failing run replays from its seed.
//
// The recorder (watches of TeamSpaces, namespaces and quotas, the
// archive's listing) appends events in the order it sees them; times are
// the API server's (creation and deletion timestamps) or the archive's
// (a record's write time) where the object carries one, else the
// recorder's clock, all on one machine.
package robust

import (
	"slices"
	"time"
)

// Kind is what an event says happened.
type Kind string

const (
	// TeamSpaceDeleting: the TeamSpace's deletion was asked for (its
	// deletionTimestamp, At).
	TeamSpaceDeleting Kind = "TeamSpaceDeleting"
	// TeamSpaceGone: the TeamSpace is gone from the API.
	TeamSpaceGone Kind = "TeamSpaceGone"
	// RemovalConfirmed: the TeamSpace's annotation confirms the removal of
	// entry Entry (platform.labhub.io/remove-namespaces), first seen At.
	RemovalConfirmed Kind = "RemovalConfirmed"
	// NamespaceSeen: a namespace of a TeamSpace (Owner: its controller's
	// uid, "" for an adopted one), with its entry and whether it is one
	// the TeamSpace adopted.
	NamespaceSeen Kind = "NamespaceSeen"
	// NamespaceDeleting: a namespace's deletion began (its
	// deletionTimestamp, At).
	NamespaceDeleting Kind = "NamespaceDeleting"
	// RecordStored: the archive holds a record (UID: the TeamSpace's, or
	// a removed namespace's), written At, under Key.
	RecordStored Kind = "RecordStored"
	// QuotaSample: whether Namespace had its quota (team-quota) At.
	QuotaSample Kind = "QuotaSample"
	// TeamQuotas: what the quotas of TeamSpace UID's namespaces hold
	// together (Sum) against its totals (Totals), read At, by resource
	// (pods, requests.cpu in millicores, ...).
	TeamQuotas Kind = "TeamQuotas"
	// ReadySample: whether TeamSpace UID (not being deleted) was Ready At.
	ReadySample Kind = "ReadySample"
	// FaultInjected: the fault run hit Key (a Target) At; it was whole
	// again Until.
	FaultInjected Kind = "FaultInjected"
	// MemorySample: the resident memory (Bytes) of process Key At.
	MemorySample Kind = "MemorySample"
	// TotalsWritten: the workload wrote TeamSpace UID's totals (Totals,
	// those it changed), sent At (Writes).
	TotalsWritten Kind = "TotalsWritten"
)

// Event is one thing observed.
type Event struct {
	At   time.Time `json:"at"`
	Kind Kind      `json:"kind"`
	// TeamSpace and UID name the TeamSpace (for RecordStored, UID is the
	// record's: a TeamSpace's or a removed namespace's).
	TeamSpace string `json:"teamspace,omitempty"`
	UID       string `json:"uid,omitempty"`
	// Namespace, its uid and controller (Owner, a TeamSpace uid), the
	// entry of spec.namespaces it is, and whether it was adopted.
	Namespace    string `json:"namespace,omitempty"`
	NamespaceUID string `json:"namespaceUID,omitempty"`
	Owner        string `json:"owner,omitempty"`
	Entry        string `json:"entry,omitempty"`
	Adopted      bool   `json:"adopted,omitempty"`
	// Key is a record's name in the archive; Present a quota sample's
	// answer.
	Key     string `json:"key,omitempty"`
	Present bool   `json:"present,omitempty"`
	// Totals and Sum are a TeamQuotas sample's.
	Totals map[string]int64 `json:"totals,omitempty"`
	Sum    map[string]int64 `json:"sum,omitempty"`
	// Until is when a fault's target was whole again; Bytes a memory
	// sample's.
	Until time.Time `json:"until,omitzero"`
	Bytes int64     `json:"bytes,omitempty"`
}

// History is a run's events.
type History struct {
	Events []Event `json:"events"`
}

// Add appends an event.
func (h *History) Add(e Event) { h.Events = append(h.Events, e) }

// sorted is the events in time order, ties in the order they were added.
func (h *History) sorted() []Event {
	out := slices.Clone(h.Events)
	slices.SortStableFunc(out, func(a, b Event) int { return a.At.Compare(b.At) })
	return out
}

// first is the time of the first event of kind that match says is the
// one, and whether there is one.
func (h *History) first(kind Kind, match func(Event) bool) (time.Time, bool) {
	for _, e := range h.sorted() {
		if e.Kind == kind && match(e) {
			return e.At, true
		}
	}
	return time.Time{}, false
}

// Ready is a ReadySample's answer (kept in Present).
func (e Event) Ready() bool { return e.Present }

// Writes are the workload's writes the API server took, as the events
// they are: a TeamSpace's deletion asked for, an entry's removal
// confirmed, its totals changed; each at the time it was sent. The
// recorder sees them through its watches, which after a restart of the
// API server relist, seconds later than its watches of namespaces or
// quotas may: a namespace deleted on a confirmation, or a quota raised to
// a total, that the recorder has not seen yet is the recorder's lag, not
// the system's (the fault run at 1000 failed on exactly that, three times,
// each after a restart of kube-apiserver). Sent, not answered: a write is
// in effect no earlier than it was sent, so what it allowed is allowed
// from then on, and nothing earlier.
func Writes(ops []Op) []Event {
	var out []Event
	for _, o := range ops {
		if o.Err != "" || o.UID == "" || o.Sent.IsZero() {
			continue
		}
		e := Event{At: o.Sent, TeamSpace: o.TeamSpace, UID: o.UID}
		switch {
		case o.Kind == "delete":
			e.Kind = TeamSpaceDeleting
		case o.Kind == "remove-entry":
			e.Kind, e.Entry = RemovalConfirmed, o.Detail
		case len(o.Totals) > 0:
			e.Kind, e.Totals = TotalsWritten, o.Totals
		default:
			continue
		}
		out = append(out, e)
	}
	return out
}
