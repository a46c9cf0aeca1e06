package teamspace

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// stalledReasons are the Ready reasons no sync can end: the spec, a
// conflict, the requester's allowance, the platform's limits, a reserved
// owner or an adoption's confirmation must change first.
var stalledReasons = []string{
	v1alpha1.ReasonInvalidSpec, v1alpha1.ReasonNamespaceConflict, v1alpha1.ReasonClusterRoleConflict,
	v1alpha1.ReasonAllowanceExceeded, v1alpha1.ReasonLimitsInvalid, v1alpha1.ReasonOwnerReserved,
	v1alpha1.ReasonNamespaceKept, v1alpha1.ReasonAdoptionPlanned,
}

// conditions are the TeamSpace's conditions for a Ready status, reason
// and message: Ready, and beside a Ready that is not True, Reconciling or
// Stalled (by reason) with the same reason and message.
func conditions(o *observation, status metav1.ConditionStatus, reason, message string) []metav1.Condition {
	cs := []metav1.Condition{condition(o, v1alpha1.ConditionReady, status, reason, message)}
	if status == metav1.ConditionTrue {
		return cs
	}
	abnormal := v1alpha1.ConditionReconciling
	if slices.Contains(stalledReasons, reason) {
		abnormal = v1alpha1.ConditionStalled
	}
	return append(cs, condition(o, abnormal, metav1.ConditionTrue, reason, message))
}

// condition builds one condition. lastTransitionTime keeps its old value
// while the status of that type does not change; on a change it is the
// newest timestamp the request shows (the write that caused the change),
// never the hook's clock, so that the same request gives the same answer.
func condition(o *observation, typ string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
	c := metav1.Condition{
		Type:               typ,
		Status:             status,
		ObservedGeneration: o.parent.Metadata.Generation,
		Reason:             reason,
		Message:            message,
	}
	for _, old := range o.parent.Status.Conditions {
		if old.Type == typ && old.Status == status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
			return c
		}
	}
	c.LastTransitionTime = metav1.NewTime(o.now())
	return c
}
