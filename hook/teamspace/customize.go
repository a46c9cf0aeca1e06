package teamspace

import rbacv1 "k8s.io/api/rbac/v1"

// Customize asks the engine to show, as related objects, namespace
// team-<name> and ClusterRole teamspace-owner-<name> whoever owns them: a
// TeamSpace then says so when someone else holds either name
// (NamespaceConflict, ClusterRoleConflict) instead of waiting in silence.
func Customize(r *Request) *CustomizeResponse {
	name := r.Parent.Metadata.Name
	return &CustomizeResponse{RelatedResources: []RelatedResourceRule{{
		APIVersion: "v1",
		Resource:   "namespaces",
		Names:      []string{NamespaceName(name)},
	}, {
		APIVersion: rbacv1.SchemeGroupVersion.String(),
		Resource:   "clusterroles",
		Names:      []string{OwnerAccessName(name)},
	}}}
}
