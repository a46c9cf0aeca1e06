package teamspace

import rbacv1 "k8s.io/api/rbac/v1"

// Ready reasons of the owners' ClusterRoleBinding.
const (
	ReasonClusterRoleBindingPending   = "ClusterRoleBindingPending"
	ReasonClusterRoleBindingOutOfDate = "ClusterRoleBindingOutOfDate"
)

// ownerBindingType binds the owners to their ClusterRole. Like the
// RoleBinding, subjects added by hand are removed in two passes, and a
// removed owner loses the access within the engine's next write.
var ownerBindingType = &childType{
	apiVersion:      rbacv1.SchemeGroupVersion.String(),
	kind:            "ClusterRoleBinding",
	name:            func(u *unit) string { return OwnerAccessName(u.teamspace) },
	once:            true,
	after:           ownerRoleType,
	optional:        true,
	pendingReason:   ReasonClusterRoleBindingPending,
	outOfDateReason: ReasonClusterRoleBindingOutOfDate,
	newObject:       func() object { return &rbacv1.ClusterRoleBinding{} },
	build: func(u *unit, _ *Object) object {
		if len(u.spec.Owners) == 0 {
			return nil
		}
		return &rbacv1.ClusterRoleBinding{
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: OwnerAccessName(u.teamspace)},
			Subjects: ownerSubjects(u.spec.Owners),
		}
	},
	decode: func(o *Object) (object, error) {
		b := &rbacv1.ClusterRoleBinding{}
		b.Labels = o.Metadata.Labels
		return b, decodeBinding(o, &b.RoleRef, &b.Subjects)
	},
	content: func(obj object) object {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return &rbacv1.ClusterRoleBinding{RoleRef: b.RoleRef, Subjects: b.Subjects}
	},
	compared: func(obj object) object {
		b := obj.(*rbacv1.ClusterRoleBinding)
		return &rbacv1.ClusterRoleBinding{RoleRef: b.RoleRef, Subjects: byNameOrder(b.Subjects)}
	},
	ready: func(*unit) string { return "" },
}
