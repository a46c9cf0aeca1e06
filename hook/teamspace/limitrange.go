package teamspace

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// LimitRangeName is the LimitRange that gives containers without requests
// a default request, so that quota admission (which refuses a pod without
// requests.cpu once the quota limits it) admits them.
const LimitRangeName = "team-defaults"

// share is total/pods rounded down to a millicore (milli) or a byte, at
// least one, in the canonical form the API server stores. That is the
// printed form after one more parse: a suffix-less number is read back as
// decimal, so 320000 bytes computed in binary format ("320000") is stored
// as "320k".
func share(total resource.Quantity, pods int64, milli bool) string {
	var q *resource.Quantity
	if milli {
		q = resource.NewMilliQuantity(max(total.MilliValue()/pods, 1), resource.DecimalSI)
	} else {
		q = resource.NewQuantity(max(total.Value()/pods, 1), total.Format)
	}
	return canonical(*q)
}

// limitRangeType is team-defaults: a container defaultRequest, and a
// default limit only of ephemeral storage. No default limit of cpu or
// memory: a default limit below a request the user sets would make the pod
// invalid (for ephemeral storage that is the price of counting it).
var limitRangeType = &childType{
	apiVersion:      "v1",
	kind:            "LimitRange",
	name:            func(*unit) string { return LimitRangeName },
	namespaced:      true,
	pendingReason:   v1alpha1.ReasonLimitRangePending,
	outOfDateReason: v1alpha1.ReasonLimitRangeOutOfDate,
	newObject:       func() object { return &corev1.LimitRange{} },
	build: func(u *unit, _ *Object) object {
		spec := u.spec
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(spec.DefaultRequestCPU)}
		if spec.DefaultRequestMemory != "" {
			req[corev1.ResourceMemory] = resource.MustParse(spec.DefaultRequestMemory)
		}
		item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: req}
		// Ephemeral storage is counted only where a container states it
		// (quota admission requires cpu and memory, nothing else): the
		// default request and limit make every container count, and the
		// limit is what the kubelet evicts at. Both are total / pods, so
		// spec.pods default-sized pods fit team-objects exactly.
		if e := spec.DefaultEphemeralStorage; e != "" {
			req[corev1.ResourceEphemeralStorage] = resource.MustParse(e)
			item.Default = corev1.ResourceList{corev1.ResourceEphemeralStorage: resource.MustParse(e)}
		}
		return &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{item}}}
	},
	decode: func(o *Object) (object, error) {
		lr := &corev1.LimitRange{}
		lr.Labels = o.Metadata.Labels
		lr.Annotations = o.Metadata.Annotations
		return lr, decodeRaw(o.Spec, &lr.Spec)
	},
	// The limits list is the hook's as a whole: the engine replaces a list
	// without a merge key, so an item or field added by hand is reverted.
	// The quotas of its namespace (QuotasAnnotation, quotas.go) are
	// kept with it, as last applied, but not compared: each quota is, as
	// the DecoratorController reports it.
	content:  func(obj object) object { return limitRangeContent(obj, v1alpha1.QuotasAnnotation) },
	compared: func(obj object) object { return limitRangeContent(obj) },
	ready: func(u *unit) string {
		spec := u.spec
		req := ", default request cpu=" + spec.DefaultRequestCPU
		if spec.DefaultRequestMemory != "" {
			req += ", memory=" + spec.DefaultRequestMemory
		}
		if spec.DefaultEphemeralStorage != "" {
			req += ", ephemeral-storage=" + spec.DefaultEphemeralStorage + " (also its default limit)"
		}
		return req
	},
}

// limitRangeContent is a LimitRange reduced to its limits and the
// annotations of keys (none when it has none of them: a LimitRange
// without compares and is kept as it always was).
func limitRangeContent(obj object, keys ...string) object {
	lr := &corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: obj.(*corev1.LimitRange).Spec.Limits}}
	if a := owned(obj.GetAnnotations(), keys); len(a) > 0 {
		lr.Annotations = a
	}
	return lr
}
