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

// quotaUsage reads the observed team-quotas' status, one per namespace of
// the team, team-<name>'s first (nil: no quota there yet), and sums them:
// the team's use against its totals, which the quotas divide exactly. A
// figure is known only where every quota reports it.
func quotaUsage(quotas ...*Object) *Usage {
	hard, used := corev1.ResourceList{}, corev1.ResourceList{}
	for _, key := range hardKeys {
		var h, u resource.Quantity
		known := len(quotas) > 0
		for i, q := range quotas {
			var qh, qu resource.Quantity
			var okHard, okUsed bool
			if q != nil {
				qh, okHard = q.Status.Hard[key]
				qu, okUsed = q.Status.Used[key]
			}
			if !okHard || !okUsed {
				known = false
				break
			}
			if i == 0 {
				h, u = qh.DeepCopy(), qu.DeepCopy()
				continue
			}
			h.Add(qh)
			u.Add(qu)
		}
		if known {
			hard[key], used[key] = h, u
		}
	}
	usage := &Usage{
		Pods: fraction(used, hard, corev1.ResourcePods),
		CPU:  fraction(used, hard, corev1.ResourceRequestsCPU),
	}
	// Memory is a column only where the team's quota limits it.
	if len(quotas) > 0 && quotas[0] != nil {
		if _, ok := quotas[0].Status.Hard[corev1.ResourceRequestsMemory]; ok {
			usage.Memory = fraction(used, hard, corev1.ResourceRequestsMemory)
		}
	}
	return usage
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
