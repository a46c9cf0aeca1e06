package teamspace

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"

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

// checkOwners checks spec.owners as crd.yaml does: a known kind, a name,
// a namespace for a ServiceAccount only, no name twice. Names must be
// unique even across kinds: Metacontroller merges a list whose items all
// have a "name" as a map keyed by it, so a User and a Group of the same
// name would collapse into one subject.
func checkOwners(owners []Owner) ([]Owner, []string) {
	var problems []string
	if len(owners) > MaxOwners {
		problems = append(problems, fmt.Sprintf("spec.owners has %d entries, at most %d", len(owners), MaxOwners))
	}
	seen := map[string]int{}
	for i, o := range owners {
		field := fmt.Sprintf("spec.owners[%d]", i)
		switch o.Kind {
		case "User", "Group":
			if o.Namespace != "" {
				problems = append(problems, fmt.Sprintf("%s.namespace is only allowed for a ServiceAccount, not a %s", field, o.Kind))
			}
		case "ServiceAccount":
			if o.Namespace == "" {
				problems = append(problems, field+".namespace is required for a ServiceAccount")
			} else if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s.namespace %q is not a namespace name: %s", field, o.Namespace, errs[0]))
			}
			if errs := validation.IsDNS1123Subdomain(o.Name); o.Name != "" && len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s.name %q is not a ServiceAccount name: %s", field, o.Name, errs[0]))
			}
		default:
			problems = append(problems, fmt.Sprintf("%s.kind must be one of User, Group, ServiceAccount, got %q", field, o.Kind))
		}
		if o.Name == "" {
			problems = append(problems, field+".name must not be empty")
		}
		if j, dup := seen[o.Name]; dup && o.Name != "" {
			problems = append(problems, fmt.Sprintf("%s.name %q is already spec.owners[%d]'s (each name once)", field, o.Name, j))
		} else {
			seen[o.Name] = i
		}
	}
	return owners, problems
}

// ReservedNamespaces are namespaces whose ServiceAccounts are never owners,
// beside every kube-* namespace: the platform's own.
var ReservedNamespaces = []string{v1alpha1.SystemNamespace}

// reservedOwner says why an owner is never bound ("" if it may be): the
// API server's own users and groups (system:unauthenticated,
// system:authenticated, system:masters, system:serviceaccounts:...,
// system:node:...) would hand the namespace to everyone, to every
// ServiceAccount or to the cluster's components, and the ServiceAccounts of
// kube-* and the platform's namespaces are the cluster's and the
// platform's. hack/deploy/limits.yaml refuses them at admission (unless the
// writer is exempt); the hook skips any that is stored all the same.
// ReservedOwner reports whether owner o is never bound (reservedOwner):
// naming it in spec.owners gives nobody anything.
func ReservedOwner(o Owner) bool { return reservedOwner(o) != "" }

func reservedOwner(o Owner) string {
	switch {
	case (o.Kind == "User" || o.Kind == "Group") && strings.HasPrefix(o.Name, "system:"):
		return "system: users and groups are the API server's own"
	case o.Kind == rbacv1.ServiceAccountKind && (strings.HasPrefix(o.Namespace, "kube-") || slices.Contains(ReservedNamespaces, o.Namespace)):
		return "ServiceAccounts of kube-* and " + strings.Join(ReservedNamespaces, ", ") + " are the cluster's and the platform's"
	}
	return ""
}

// withoutReserved splits owners into those that are bound and a
// description of each reserved one.
func withoutReserved(owners []Owner) ([]Owner, []string) {
	var bound []Owner
	var reserved []string
	for i, o := range owners {
		if why := reservedOwner(o); why != "" {
			who := o.Kind + " " + o.Name
			if o.Namespace != "" {
				who = o.Kind + " " + o.Namespace + "/" + o.Name
			}
			reserved = append(reserved, fmt.Sprintf("spec.owners[%d] (%s: %s)", i, who, why))
			continue
		}
		bound = append(bound, o)
	}
	return bound, reserved
}

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
