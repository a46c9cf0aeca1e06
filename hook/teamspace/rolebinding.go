package teamspace

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// RoleBindingName binds the team's owners to the ClusterRole OwnerRole in
// the team namespace.
const (
	RoleBindingName = "team-owners"
	OwnerRole       = "admin"
)

// Owner is one entry of spec.owners: a RoleBinding subject.
type Owner = v1alpha1.Owner

// roleBindingType is team-owners: the owners bound to ClusterRole
// OwnerRole in the team namespace, asked for only when the spec lists
// owners.
var roleBindingType = &childType{
	apiVersion:      rbacv1.SchemeGroupVersion.String(),
	kind:            "RoleBinding",
	name:            func(*unit) string { return RoleBindingName },
	namespaced:      true,
	optional:        true,
	pendingReason:   v1alpha1.ReasonRoleBindingPending,
	outOfDateReason: v1alpha1.ReasonRoleBindingOutOfDate,
	newObject:       func() object { return &rbacv1.RoleBinding{} },
	build: func(u *unit, _ *Object) object {
		if len(u.spec.Owners) == 0 {
			return nil
		}
		return &rbacv1.RoleBinding{
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: OwnerRole},
			Subjects: ownerSubjects(u.spec.Owners),
		}
	},
	decode: func(o *Object) (object, error) {
		rb := &rbacv1.RoleBinding{}
		rb.Labels = o.Metadata.Labels
		return rb, decodeBinding(o, &rb.RoleRef, &rb.Subjects)
	},
	content: func(obj object) object {
		rb := obj.(*rbacv1.RoleBinding)
		return &rbacv1.RoleBinding{RoleRef: rb.RoleRef, Subjects: rb.Subjects}
	},
	compared: func(obj object) object {
		rb := obj.(*rbacv1.RoleBinding)
		return &rbacv1.RoleBinding{RoleRef: rb.RoleRef, Subjects: byNameOrder(rb.Subjects)}
	},
	ready: func(u *unit) string {
		if n := len(u.spec.Owners); n > 0 {
			return fmt.Sprintf(", %d owner(s) bound to ClusterRole %s", n, OwnerRole)
		}
		return ""
	},
}

// The owners' two bindings (team-owners and teamspace-owner-<name>) share
// what follows: their subjects and how they are read. Subjects added by
// hand are strangers (strangers.go), removed in two passes.

// decodeBinding reads an observed binding's roleRef and subjects.
func decodeBinding(o *Object, roleRef *rbacv1.RoleRef, subjects *[]rbacv1.Subject) error {
	if err := decodeRaw(o.RoleRef, roleRef); err != nil {
		return err
	}
	return decodeRaw(o.Subjects, subjects)
}

// ownerSubjects are the owners as RoleBinding subjects, written as the API
// server stores them (apiGroup set for User and Group, none for a
// ServiceAccount).
func ownerSubjects(owners []Owner) []rbacv1.Subject {
	subjects := make([]rbacv1.Subject, 0, len(owners))
	for _, o := range owners {
		s := rbacv1.Subject{Kind: o.Kind, Name: o.Name}
		if o.Kind == rbacv1.ServiceAccountKind {
			s.Namespace = o.Namespace
		} else {
			s.APIGroup = rbacv1.GroupName
		}
		subjects = append(subjects, s)
	}
	return subjects
}

// byNameOrder is subjects sorted by name (a copy): the engine merges them
// as a map keyed by name and keeps their live order, so order is no
// difference.
func byNameOrder(subjects []rbacv1.Subject) []rbacv1.Subject {
	if subjects == nil {
		return nil
	}
	out := slices.Clone(subjects)
	slices.SortStableFunc(out, func(a, b rbacv1.Subject) int { return strings.Compare(a.Name, b.Name) })
	return out
}
