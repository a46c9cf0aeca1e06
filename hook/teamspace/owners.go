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
// a namespace for a ServiceAccount only, no entry twice.
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
	seen := map[Owner]int{}
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
		if j, dup := seen[o]; dup {
			problems = append(problems, fmt.Sprintf("%s is the same owner as spec.owners[%d]", field, j))
		} else {
			seen[o] = i
		}
	}
	return owners, problems
}

// desiredRoleBinding binds the owners to ClusterRole admin in the team
// namespace; subjects are written as the API server stores them (apiGroup
// set for User and Group, none for a ServiceAccount).
func desiredRoleBinding(teamspace string, owners []Owner) *unstructured.Unstructured {
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
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": rbacGroup + "/v1",
		"kind":       "RoleBinding",
		"metadata":   childMeta(teamspace, RoleBindingName),
		"roleRef":    map[string]any{"apiGroup": rbacGroup, "kind": "ClusterRole", "name": OwnerRole},
		"subjects":   subjects,
	}}
}
