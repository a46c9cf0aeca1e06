package teamspace

import (
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// UsageUnknown is shown for a figure the quota does not report yet: the
// quota does not exist, or its controller has not filled its status. It is
// not "0/4": nobody has counted.
const UsageUnknown = "-"

// Usage is how much of the team's quota is used, "used/hard" per resource
// in the canonical form the API server stores (1/4, 100m/2, 256Mi/1Gi), as
// the quota's own status reports them: strings, so that kubectl shows each
// as a column (crd.yaml's printer columns).
//
// It changes only when the quota's figures do: the engine writes the
// status only when the answer differs, so an unchanged quota writes
// nothing, and each change of the quota's status (a pod admitted or gone)
// costs one status write of the TeamSpace. The type is the API's
// (status.usage), so the answer has the schema's shape.
type Usage = v1alpha1.Usage

// quotaUsage reads the observed quota's status (nil: no quota).
func quotaUsage(quota *Object) *Usage {
	var hard, used corev1.ResourceList
	if quota != nil {
		hard, used = quota.Status.Hard, quota.Status.Used
	}
	u := &Usage{
		Pods: fraction(used, hard, corev1.ResourcePods),
		CPU:  fraction(used, hard, corev1.ResourceRequestsCPU),
	}
	if _, ok := hard[corev1.ResourceRequestsMemory]; ok {
		u.Memory = fraction(used, hard, corev1.ResourceRequestsMemory)
	}
	return u
}

// fraction is "used/hard" of one resource, or UsageUnknown unless the
// quota reports both. Used is printed in the limit's format (the quota
// controller sums requests as bytes: 268435456 of 1Gi reads 256Mi/1Gi),
// each canonical.
func fraction(used, hard corev1.ResourceList, key corev1.ResourceName) string {
	h, okHard := hard[key]
	u, okUsed := used[key]
	if !okHard || !okUsed {
		return UsageUnknown
	}
	var inFormat *resource.Quantity
	if v, ok := u.AsInt64(); ok {
		inFormat = resource.NewQuantity(v, h.Format)
	} else {
		inFormat = resource.NewMilliQuantity(u.MilliValue(), h.Format)
	}
	return inFormat.String() + "/" + h.String()
}
