package teamspace

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// QuotaName is the ResourceQuota in every team namespace.
const QuotaName = "team-quota"

// Quota keys the hook owns in the quota's spec.hard, in message order.
var hardKeys = []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory}

// quotaType is team-quota: pods, requests.cpu and, when spec.memory is set,
// requests.memory. Keys others add to spec.hard are theirs (the engine
// keeps them); a requests.memory the spec no longer sets is a difference,
// which the engine removes.
var quotaType = &childType{
	apiVersion:      "v1",
	kind:            "ResourceQuota",
	name:            func(*unit) string { return QuotaName },
	namespaced:      true,
	viaDecorator:    true,
	pendingReason:   v1alpha1.ReasonQuotaPending,
	outOfDateReason: v1alpha1.ReasonQuotaOutOfDate,
	// A quota made before children carried the TeamSpace label (recorded
	// requests in tests/testdata) counts as up to date while its limits are:
	// the engine adds the label with its next write of the quota.
	labelsIgnored: true,
	newObject:     func() object { return &corev1.ResourceQuota{} },
	build: func(u *unit, _ *Object) object {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: specHard(u.spec)}}
	},
	decode: func(o *Object) (object, error) {
		q := &corev1.ResourceQuota{}
		q.Labels = o.Metadata.Labels
		return q, decodeRaw(o.Spec, &q.Spec)
	},
	content:  ownedHard(hardKeys),
	describe: func(obj object) string { return describeHard(obj.(*corev1.ResourceQuota).Spec.Hard) },
	noun:     "quota",
	ready: func(u *unit) string {
		return " with quota " + describeHard(specHard(u.spec))
	},
}

// ownedHard is the content of a quota the hook owns keys of: its spec.hard
// reduced to keys (team-quota's, team-objects').
func ownedHard(keys []corev1.ResourceName) func(object) object {
	return func(obj object) object {
		hard := corev1.ResourceList{}
		for _, k := range keys {
			if v, ok := obj.(*corev1.ResourceQuota).Spec.Hard[k]; ok {
				hard[k] = v
			}
		}
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	}
}

// specHard is the quota a valid spec asks for.
func specHard(spec Spec) corev1.ResourceList {
	hard := corev1.ResourceList{
		corev1.ResourcePods:        resource.MustParse(spec.Pods),
		corev1.ResourceRequestsCPU: resource.MustParse(spec.CPU),
	}
	if spec.Memory != "" {
		hard[corev1.ResourceRequestsMemory] = resource.MustParse(spec.Memory)
	}
	return hard
}

// describeHard prints quota limits in a fixed order for messages;
// requests.memory only when set.
func describeHard(hard corev1.ResourceList) string {
	get := func(k corev1.ResourceName) string {
		if v, ok := hard[k]; ok {
			return v.String()
		}
		return "<unset>"
	}
	s := fmt.Sprintf("pods=%s, requests.cpu=%s", get(corev1.ResourcePods), get(corev1.ResourceRequestsCPU))
	if v, ok := hard[corev1.ResourceRequestsMemory]; ok {
		s += ", requests.memory=" + v.String()
	}
	return s
}
