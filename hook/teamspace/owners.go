package teamspace

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
	rbacGroup = "rbac.authorization.k8s.io"
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

// ownerSubjects are the owners as RoleBinding subjects, written as the API
// server stores them (apiGroup set for User and Group, none for a
// ServiceAccount).
func ownerSubjects(owners []Owner) []any {
	subjects := make([]any, 0, len(owners))
	for _, o := range owners {
		s := map[string]any{"kind": o.Kind, "name": o.Name}
		if o.Kind == "ServiceAccount" {
			s["namespace"] = o.Namespace
		} else {
			s["apiGroup"] = rbacGroup
		}
		subjects = append(subjects, s)
	}
	return subjects
}

// roleBindingWith is team-owners: the subjects bound to ClusterRole admin in
// the team namespace.
func roleBindingWith(teamspace string, subjects []any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rbacGroup + "/v1",
		"kind":       "RoleBinding",
		"metadata":   childMeta(teamspace, RoleBindingName),
		"roleRef":    map[string]any{"apiGroup": rbacGroup, "kind": "ClusterRole", "name": OwnerRole},
		"subjects":   subjects,
	}}
}

// strangerSubjects handles subjects someone added by hand. The engine's
// 3-way merge treats subjects as a map keyed by name and removes only
// names its last-applied copy holds, so a name added by hand would stay
// for ever. They are removed in two passes: while the last-applied copy
// lacks one of them the answer includes them all (the engine records them,
// an annotation-only write), and once it holds them the answer drops them
// and the merge deletes them. It returns the subjects to answer and the
// names being removed.
func strangerSubjects(desired []any, observed *Object) ([]any, []string) {
	if observed == nil {
		return desired, nil
	}
	wanted := map[string]bool{}
	for _, s := range desired {
		wanted[subjectName(s)] = true
	}
	var extra []any
	var names []string
	for _, s := range asList(observed.Subjects) {
		if n := subjectName(s); !wanted[n] {
			extra = append(extra, s)
			names = append(names, n)
		}
	}
	if len(extra) == 0 {
		return desired, nil
	}
	recorded := map[string]bool{}
	if applied := lastApplied(observed); applied != nil {
		for _, s := range asList(applied["subjects"]) {
			recorded[subjectName(s)] = true
		}
	}
	for _, n := range names {
		if !recorded[n] {
			return append(append([]any{}, desired...), extra...), names
		}
	}
	return desired, names
}

func subjectName(s any) string {
	m, _ := s.(map[string]any)
	n, _ := m["name"].(string)
	return n
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}
