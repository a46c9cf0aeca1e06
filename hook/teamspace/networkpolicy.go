package teamspace

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// NetworkPolicyName is the policy that admits ingress to the team's pods
// only from pods of the same namespace.
const NetworkPolicyName = "team-isolation"

// desiredNetworkPolicy selects every pod of the namespace and allows ingress
// only from pods of the same namespace (a podSelector peer without a
// namespaceSelector means this namespace). Egress is not restricted.
func desiredNetworkPolicy(teamspace string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata":   childMeta(teamspace, NetworkPolicyName),
		"spec": map[string]any{
			"podSelector": map[string]any{},
			"policyTypes": []any{"Ingress"},
			"ingress": []any{map[string]any{
				"from": []any{map[string]any{"podSelector": map[string]any{}}},
			}},
		},
	}}
}
