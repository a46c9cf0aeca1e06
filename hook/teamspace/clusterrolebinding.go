package teamspace

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
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
	pendingReason:   v1alpha1.ReasonClusterRoleBindingPending,
	outOfDateReason: v1alpha1.ReasonClusterRoleBindingOutOfDate,
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
