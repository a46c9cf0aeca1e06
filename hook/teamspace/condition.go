package teamspace

import (
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The conditions a TeamSpace reports. Ready is always there. Reconciling
// and Stalled follow the "abnormal-true" convention of kstatus
// (sigs.k8s.io/cli-utils, what Flux and kpt wait with), present only while
// they are True: Reconciling while the TeamSpace is on its way (kstatus
// InProgress), Stalled where a person must act (kstatus Failed). Ready
// True has neither (kstatus Current).
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// stalledReasons are the Ready reasons no sync can end: the spec, a
// conflict, the requester's allowance, the platform's limits or a
// reserved owner must change first.
var stalledReasons = []string{
	ReasonInvalidSpec, ReasonNamespaceConflict, ReasonClusterRoleConflict,
	v1alpha1.ReasonAllowanceExceeded, v1alpha1.ReasonLimitsInvalid, ReasonOwnerReserved,
	ReasonNamespaceKept,
}

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

// conditions are the TeamSpace's conditions for a Ready status, reason
// and message: Ready, and beside a Ready that is not True, Reconciling or
// Stalled (by reason) with the same reason and message.
func conditions(r *Request, status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	cs := []metav1.Condition{condition(r, ConditionReady, status, reason, message)}
	if status == metav1.ConditionTrue {
		return cs
	}
	abnormal := ConditionReconciling
	if slices.Contains(stalledReasons, reason) {
		abnormal = ConditionStalled
	}
	return append(cs, condition(r, abnormal, metav1.ConditionTrue, reason, message))
}

// condition builds one condition. lastTransitionTime keeps its old value
// while the status of that type does not change; on a change it is the
// newest timestamp the request shows (the write that caused the change),
// never the hook's clock, so that the same request gives the same answer.
func condition(r *Request, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	c := metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: r.Parent.Metadata.Generation,
		Reason:             reason,
		Message:            message,
	}
	for _, old := range r.Parent.Status.Conditions {
		if old.Type == typ && old.Status == status && !old.LastTransitionTime.IsZero() {
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
