package teamspace

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ConditionReady is the one condition a TeamSpace reports.
const ConditionReady = "Ready"

// Reasons of the Ready condition that are not one child type's; each type
// declares its own pending and out-of-date reasons in its file.
const (
	ReasonReady       = "Ready"
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCreating: the namespace is missing or Active and none of the
	// children inside it exist yet (a new TeamSpace, or one whose
	// namespace was deleted).
	ReasonCreating = "Creating"
	// ReasonChildRemoving: a child the spec no longer asks for (owners
	// removed, networkIsolation false) is still there.
	ReasonChildRemoving = "ChildRemoving"
	ReasonDeleting      = "Deleting"
)

// readyCondition builds the Ready condition. lastTransitionTime keeps its old
// value while the status does not change; on a change it is the newest
// timestamp the request shows (the write that caused the change), never the
// hook's clock, so that the same request gives the same answer.
func readyCondition(r *Request, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	c := metav1.Condition{
		Type:               ConditionReady,
		Status:             status,
		ObservedGeneration: r.Parent.Metadata.Generation,
		Reason:             reason,
		Message:            message,
	}
	for _, old := range r.Parent.Status.Conditions {
		if old.Type == ConditionReady && old.Status == status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
			return c
		}
	}
	c.LastTransitionTime = metav1.NewTime(r.observedAt())
	return c
}

// observedAt is the newest timestamp in the request: creation, deletion and
// managedFields times of the parent and every child. It stands in for "now"
// without making the answer depend on when it is computed.
func (r *Request) observedAt() time.Time {
	var latest time.Time
	consider := func(m *Meta) {
		for _, t := range []*metav1.Time{&m.CreationTimestamp, m.DeletionTimestamp} {
			if t != nil && t.After(latest) {
				latest = t.Time
			}
		}
		for _, f := range m.ManagedFields {
			if f.Time != nil && f.Time.After(latest) {
				latest = f.Time.Time
			}
		}
	}
	consider(&r.Parent.Metadata)
	for _, objs := range r.Children {
		for _, o := range objs {
			consider(&o.Metadata)
		}
	}
	if latest.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return latest.UTC()
}
