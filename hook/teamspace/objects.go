package teamspace

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// ObjectsQuotaName is the second ResourceQuota of a team namespace: object
// counts and ephemeral storage, asked for only when the spec sets them, so
// that team-quota stays exactly what a seed-style spec had.
const ObjectsQuotaName = "team-objects"

// Ephemeral storage keys of team-objects: requests and limits alike hold
// spec.ephemeralStorage (the LimitRange gives every container both).
const (
	resourceRequestsEphemeral = corev1.ResourceRequestsEphemeralStorage
	resourceLimitsEphemeral   = corev1.ResourceLimitsEphemeralStorage
)

// objectCounts are the keys spec.objects takes, each a quota resource name
// (and so the key of team-objects' spec.hard), in message order, with the
// fewest a namespace can live with: every namespace holds ConfigMap
// kube-root-ca.crt (which every pod mounts) and, with spec.objects set,
// both quotas. A lower count would refuse the cluster's own object, or
// team-quota itself.
var objectCounts = []objectCount{
	{name: "configmaps", min: 1, why: "the namespace holds ConfigMap kube-root-ca.crt, which every pod mounts"},
	{name: "persistentvolumeclaims"},
	{name: "replicationcontrollers"},
	// Whole in every namespace: a team cannot make quotas (ClusterRole
	// admin holds no write on them), so the count bounds only the
	// platform's own two; the hook adds QuotaRepairHeadroom to it (and,
	// in an adopted namespace, the quotas found there).
	{name: "resourcequotas", min: 2, why: "the namespace holds team-quota and team-objects", whole: true},
	{name: "secrets"},
	{name: "services"},
	{name: "services.loadbalancers"},
	{name: "services.nodeports"},
}

// QuotaRepairHeadroom is added to a namespace's resourcequotas count.
// Quota admission counts a quota made against the count at once, but a
// deletion only once the quota controller recounts: on the next event of
// the namespace it watches (not always: a repair made within
// milliseconds races it and stays counted), else at its resync, every 5
// minutes. A count of exactly the platform's two refused the repair of a
// deleted quota meanwhile (seconds, and over 30 s at 1000 TeamSpaces
// under pod churn: docs/notes/2026-12-07-benchmarks-to-55.md §11); a
// LimitRange deleted by hand takes both quotas along. A team cannot make
// quotas (ClusterRole admin holds no write on them), so the room is the
// platform's repairs' alone: ten deletions before a recount. The count
// still bounds what the namespace holds (the Multi-Tenancy Benchmarks'
// FNS-2 asks for it); the walkthrough's step 5a2 repairs with the quota
// controller stopped.
const QuotaRepairHeadroom = 10

// objectsHardKeys are the keys the hook owns in team-objects' spec.hard.
var objectsHardKeys = func() []corev1.ResourceName {
	keys := []corev1.ResourceName{resourceRequestsEphemeral, resourceLimitsEphemeral}
	for _, c := range objectCounts {
		keys = append(keys, c.name)
	}
	return keys
}()

type objectCount struct {
	name corev1.ResourceName
	min  int64
	why  string
	// whole: not divided among a team's namespaces; each holds the count
	// (spec.namespaces, unit.go).
	whole bool
}

// objectsHard is team-objects' spec.hard for a unit of a valid spec; nil
// when the spec sets neither objects nor ephemeralStorage. A count is
// raised by the platform's copies of that kind in the namespace
// (copies.go): they are not the team's; resourcequotas by
// QuotaRepairHeadroom and the quotas found in an adopted namespace.
func objectsHard(u *unit) corev1.ResourceList {
	spec := u.spec
	if spec.EphemeralStorage == "" && len(spec.Objects) == 0 {
		return nil
	}
	hard := corev1.ResourceList{}
	if spec.EphemeralStorage != "" {
		hard[resourceRequestsEphemeral] = resource.MustParse(spec.EphemeralStorage)
		hard[resourceLimitsEphemeral] = resource.MustParse(spec.EphemeralStorage)
	}
	counted := copiesCounted(u.copies)
	for k, n := range spec.Objects {
		if k == corev1.ResourceQuotas {
			n += QuotaRepairHeadroom + u.foundQuotas
		}
		hard[k] = *resource.NewQuantity(n+counted[k], resource.DecimalSI)
	}
	return hard
}

// describeObjectsHard prints team-objects' limits in a fixed order.
func describeObjectsHard(hard corev1.ResourceList) string {
	var parts []string
	for _, k := range objectsHardKeys {
		if v, ok := hard[k]; ok {
			parts = append(parts, string(k)+"="+v.String())
		}
	}
	if len(parts) == 0 {
		return "no limits"
	}
	return strings.Join(parts, ", ")
}

// objectsQuotaType is team-objects: ephemeral storage (requests and
// limits) and object counts, each key only when the spec sets it. Like
// team-quota, keys others add to spec.hard are theirs.
var objectsQuotaType = &childType{
	apiVersion:      "v1",
	kind:            "ResourceQuota",
	name:            func(*unit) string { return ObjectsQuotaName },
	namespaced:      true,
	viaDecorator:    true,
	optional:        true,
	pendingReason:   v1alpha1.ReasonQuotaPending,
	outOfDateReason: v1alpha1.ReasonQuotaOutOfDate,
	newObject:       func() object { return &corev1.ResourceQuota{} },
	build: func(u *unit, _ *Object) object {
		hard := objectsHard(u)
		if hard == nil {
			return nil
		}
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard}}
	},
	decode:   quotaType.decode,
	content:  ownedHard(objectsHardKeys),
	asked:    countsAsked,
	describe: func(obj object) string { return describeObjectsHard(obj.(*corev1.ResourceQuota).Spec.Hard) },
	noun:     "quota",
	ready: func(u *unit) string {
		if hard := objectsHard(u); hard != nil {
			return " and " + describeObjectsHard(hard)
		}
		return ""
	},
}
