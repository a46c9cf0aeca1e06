package teamspace

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Quota keys the hook owns in ResourceQuota spec.hard.
const (
	hardPods   = "pods"
	hardCPU    = "requests.cpu"
	hardMemory = "requests.memory"
)

// hardKeys are the quota keys the hook owns, in message order.
var hardKeys = []string{hardPods, hardCPU, hardMemory}

// Pod Security admission labels of the team namespace.
const (
	PodSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
)

// desiredNamespace is the team namespace with only the fields the hook owns:
// its TeamSpace label and the Pod Security level it enforces (always the
// latest version of the standard). The engine adds its ownerReference and
// controller-uid label itself.
func desiredNamespace(teamspace, podSecurity string) *unstructured.Unstructured {
	return namespaceWithLabels(teamspace, map[string]any{
		TeamSpaceLabel:                 teamspace,
		PodSecurityEnforceLabel:        podSecurity,
		PodSecurityEnforceVersionLabel: "latest",
	})
}

func namespaceWithLabels(teamspace string, labels map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name":   NamespaceName(teamspace),
			"labels": labels,
		},
	}}
}

// desiredQuota is team-quota with the given hard limits. The namespace is
// set explicitly: the engine would otherwise use the parent's, which is empty
// for a cluster-scoped TeamSpace.
func desiredQuota(teamspace string, hard map[string]string) *unstructured.Unstructured {
	h := make(map[string]any, len(hard))
	for k, v := range hard {
		h[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ResourceQuota",
		"metadata": map[string]any{
			"name":      QuotaName,
			"namespace": NamespaceName(teamspace),
			"labels":    map[string]any{TeamSpaceLabel: teamspace},
		},
		"spec": map[string]any{"hard": h},
	}}
}

// specHard is the quota a valid spec asks for.
func specHard(s Spec) map[string]string {
	hard := map[string]string{hardPods: s.Pods, hardCPU: s.CPU}
	if s.Memory != "" {
		hard[hardMemory] = s.Memory
	}
	return hard
}

// keptHard is the quota to keep while the spec is invalid: what the engine
// last applied (its annotation), else what is observed, limited to the keys
// the hook owns and canonicalised. Keeping it, rather than dropping the quota
// from the answer, is what stops the engine from deleting it.
func keptHard(quota *Object) map[string]string {
	source := quota.Spec.Hard
	if last, ok := quota.Metadata.Annotations[LastAppliedAnnotation]; ok {
		var applied Object
		if err := json.Unmarshal([]byte(last), &applied); err == nil && len(applied.Spec.Hard) > 0 {
			source = applied.Spec.Hard
		}
	}
	hard := map[string]string{}
	for _, k := range hardKeys {
		v, ok := source[k]
		if !ok {
			continue
		}
		if c, err := CanonicalQuantity(v); err == nil {
			v = c
		}
		hard[k] = v
	}
	return hard
}

// hardMatches reports whether an observed quota holds the wanted limits,
// comparing values as quantities ("0.5" equals "500m").
func hardMatches(observed, want map[string]string) bool {
	for k, w := range want {
		o, ok := observed[k]
		if !ok {
			return false
		}
		if o == w {
			continue
		}
		co, err1 := CanonicalQuantity(o)
		cw, err2 := CanonicalQuantity(w)
		if err1 != nil || err2 != nil || co != cw {
			return false
		}
	}
	return true
}

// isTerminating reports whether a namespace is being deleted.
func isTerminating(ns *Object) bool {
	return ns.Metadata.DeletionTimestamp != nil || ns.Status.Phase == "Terminating"
}

// ownedBy reports whether obj's controller reference is the TeamSpace uid.
func ownedBy(obj *Object, uid string) bool {
	for _, ref := range obj.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && string(ref.UID) == uid {
			return true
		}
	}
	return false
}
