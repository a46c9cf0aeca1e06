package teamspace

import (
	"encoding/json"
	"fmt"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// RoleBindingName binds the team's owners to the ClusterRole OwnerRole in
// the team namespace.
const (
	RoleBindingName = "team-owners"
	OwnerRole       = "admin"
	// MaxOwners bounds spec.owners, as crd.yaml does (it keeps the CEL
	// duplicate check within the API server's cost budget).
	MaxOwners = 32
)

// Ready reasons of the RoleBinding.
const (
	ReasonRoleBindingPending   = "RoleBindingPending"
	ReasonRoleBindingOutOfDate = "RoleBindingOutOfDate"
)

// Owner is one entry of spec.owners: a RoleBinding subject.
type Owner struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// parseOwners checks spec.owners as crd.yaml does: a known kind, a name,
// a namespace for a ServiceAccount only, no name twice. Names must be
// unique even across kinds: Metacontroller merges a list whose items all
// have a "name" as a map keyed by it, so a User and a Group of the same
// name would collapse into one subject.
func parseOwners(raw json.RawMessage) ([]Owner, []string) {
	if raw == nil || string(raw) == "null" {
		return nil, nil
	}
	var owners []Owner
	if err := json.Unmarshal(raw, &owners); err != nil {
		return nil, []string{fmt.Sprintf("spec.owners must be a list of {kind, name, namespace}, got %s", raw)}
	}
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

// roleBindingType is team-owners: the owners bound to ClusterRole
// OwnerRole in the team namespace, asked for only when the spec lists
// owners.
var roleBindingType = &childType{
	apiVersion:      rbacv1.SchemeGroupVersion.String(),
	kind:            "RoleBinding",
	name:            func(string) string { return RoleBindingName },
	namespaced:      true,
	optional:        true,
	pendingReason:   ReasonRoleBindingPending,
	outOfDateReason: ReasonRoleBindingOutOfDate,
	newObject:       func() object { return &rbacv1.RoleBinding{} },
	build: func(_ string, spec Spec, observed *Object) object {
		if len(spec.Owners) == 0 {
			return nil
		}
		return &rbacv1.RoleBinding{
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: OwnerRole},
			Subjects: boundOwners(spec, observed),
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
	busy: strangersBusy("RoleBinding"),
	ready: func(_ string, spec Spec) string {
		if n := len(spec.Owners); n > 0 {
			return fmt.Sprintf(", %d owner(s) bound to ClusterRole %s", n, OwnerRole)
		}
		return ""
	},
}

// The owners' two bindings (team-owners and teamspace-owner-<name>) share
// what follows: their subjects, how they are read, and hand-added subjects.

// boundOwners are the subjects a binding of the owners answers: the owners,
// and while being removed the subjects added by hand (see strangerSubjects).
func boundOwners(spec Spec, observed *Object) []rbacv1.Subject {
	return strangerSubjects(ownerSubjects(spec.Owners), observed)
}

// decodeBinding reads an observed binding's roleRef and subjects.
func decodeBinding(o *Object, roleRef *rbacv1.RoleRef, subjects *[]rbacv1.Subject) error {
	if err := decodeRaw(o.RoleRef, roleRef); err != nil {
		return err
	}
	return decodeRaw(o.Subjects, subjects)
}

// strangersBusy reports a binding's subjects added by hand while they are
// being removed (see strangerSubjects).
func strangersBusy(kind string) func(ref string, spec Spec, observed *Object) string {
	return func(ref string, spec Spec, observed *Object) string {
		if _, names := strangers(ownerSubjects(spec.Owners), observed); len(names) > 0 {
			return fmt.Sprintf("%s %s has subjects the spec does not list (%s), removing them", kind, ref, strings.Join(names, ", "))
		}
		return ""
	}
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

// strangerSubjects handles subjects someone added by hand. The engine's
// 3-way merge treats subjects as a map keyed by name and removes only
// names its last-applied copy holds, so a name added by hand would stay
// for ever. They are removed in two passes: while the last-applied copy
// lacks one of them the answer includes them all (the engine records them,
// an annotation-only write), and once it holds them the answer drops them
// and the merge deletes them. It returns the subjects to answer.
func strangerSubjects(desired []rbacv1.Subject, observed *Object) []rbacv1.Subject {
	extra, names := strangers(desired, observed)
	if len(extra) == 0 {
		return desired
	}
	recorded := map[string]bool{}
	var applied struct {
		Subjects []rbacv1.Subject `json:"subjects"`
	}
	if last, ok := observed.Metadata.Annotations[LastAppliedAnnotation]; ok && json.Unmarshal([]byte(last), &applied) == nil {
		for _, s := range applied.Subjects {
			recorded[s.Name] = true
		}
	}
	for _, n := range names {
		if !recorded[n] {
			return append(append([]rbacv1.Subject{}, desired...), extra...)
		}
	}
	return desired
}

// strangers are the live subjects of an observed binding (nil: none) that
// desired does not name, and their names.
func strangers(desired []rbacv1.Subject, observed *Object) ([]rbacv1.Subject, []string) {
	if observed == nil {
		return nil, nil
	}
	wanted := map[string]bool{}
	for _, s := range desired {
		wanted[s.Name] = true
	}
	var live []rbacv1.Subject
	_ = decodeRaw(observed.Subjects, &live)
	var extra []rbacv1.Subject
	var names []string
	for _, s := range live {
		if !wanted[s.Name] {
			extra = append(extra, s)
			names = append(names, s.Name)
		}
	}
	return extra, names
}
