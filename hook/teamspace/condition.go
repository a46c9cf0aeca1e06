package teamspace

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// stalledReasons are the Ready reasons no sync can end: the spec, a
// conflict, the requester's allowance, the platform's limits or a
// reserved owner must change first.
var stalledReasons = []string{
	v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonNamespaceConflict, v1alpha1.ReasonClusterRoleConflict,
	v1alpha1.ReasonAllowanceExceeded, v1alpha1.ReasonLimitsInvalid, v1alpha1.ReasonOwnerReserved,
	v1alpha1.ReasonNamespaceKept,
}

// conditions are the TeamSpace's conditions for a Ready status, reason
// and message: Ready, and beside a Ready that is not True, Reconciling or
// Stalled (by reason) with the same reason and message.
func conditions(r *Request, status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	cs := []metav1.Condition{condition(r, v1alpha1.ConditionReady, status, reason, message)}
	if status == metav1.ConditionTrue {
		return cs
	}
	abnormal := v1alpha1.ConditionReconciling
	if slices.Contains(stalledReasons, reason) {
		abnormal = v1alpha1.ConditionStalled
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
