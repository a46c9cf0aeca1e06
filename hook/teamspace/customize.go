package teamspace

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Customize asks the engine to show, as related objects, namespace
// team-<name> and ClusterRole teamspace-owner-<name> whoever owns them: a
// TeamSpace then says so when someone else holds either name
// (NamespaceConflict, ClusterRoleConflict) instead of waiting in silence.
// A TeamSpace whose requester is counted (RequesterLabel) also sees the
// limits ConfigMap and the TeamSpaces of the same label, for the
// requester's allowance (allowance.go); the engine then re-syncs it when
// any of them changes.
func Customize(r *Request) *CustomizeResponse {
	name := r.Parent.Metadata.Name
	rules := []RelatedResourceRule{{
		APIVersion: "v1",
		Resource:   "namespaces",
		Names:      []string{NamespaceName(name)},
	}, {
		APIVersion: rbacv1.SchemeGroupVersion.String(),
		Resource:   "clusterroles",
		Names:      []string{OwnerAccessName(name)},
	}}
	if label, _, counted := r.requester(); counted {
		rules = append(rules, RelatedResourceRule{
			APIVersion: "v1",
			Resource:   "configmaps",
			Namespace:  LimitsNamespace,
			Names:      []string{LimitsName},
		}, RelatedResourceRule{
			APIVersion:    APIVersion,
			Resource:      "teamspaces",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{RequesterLabel: label}},
		})
	}
	return &CustomizeResponse{RelatedResources: rules}
}
