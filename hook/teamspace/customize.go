package teamspace

import (
	"encoding/json"
	"github.com/labhub/teamspace/hook/allowance"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Customize asks the engine to show, as related objects, namespace
// team-<name> (and each entry's of spec.namespaces) and ClusterRole teamspace-owner-<name> whoever owns them: a
// TeamSpace then says so when someone else holds either name
// (NamespaceConflict, ClusterRoleConflict) instead of waiting in silence.
// A TeamSpace whose requester is counted (RequesterLabel) also sees the
// limits ConfigMap and the TeamSpaces of the same label, for the
// requester's allowance (allowance.go); the engine then re-syncs it when
// any of them changes. Every TeamSpace sees the platform's templates
// through their bundle (bundle.go), and is re-synced when it changes.
func Customize(r *Request) *CustomizeResponse {
	name := r.Parent.Metadata.Name
	rules := []RelatedResourceRule{{
		APIVersion: "v1",
		Resource:   "namespaces",
		Names:      append([]string{NamespaceName(name)}, entryNamespaces(r.Parent)...),
	}, {
		APIVersion: rbacv1.SchemeGroupVersion.String(),
		Resource:   "clusterroles",
		Names:      []string{OwnerAccessName(name)},
	}}
	m := &r.Parent.Metadata
	if req, counted := allowance.RequesterOf(m.Labels, m.Annotations); counted {
		rules = append(rules, RelatedResourceRule{
			APIVersion: "v1",
			Resource:   "configmaps",
			Namespace:  v1alpha1.SystemNamespace,
			Names:      []string{v1alpha1.LimitsName},
		}, RelatedResourceRule{
			APIVersion:    v1alpha1.APIVersion,
			Resource:      "teamspaces",
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.RequesterLabel: req.Label}},
		})
	}
	rules = append(rules, bundleRule())
	rules = append(rules, adoptionRules(adoptedNamespaces(r.Parent))...)
	return &CustomizeResponse{RelatedResources: rules}
}

// entryNamespaces are the namespaces spec.namespaces names, read leniently
// (the spec may be invalid): every entry whose name makes a DNS label.
func entryNamespaces(p *Parent) []string {
	var out []string
	for _, e := range lenientEntries(p) {
		n := ExtraNamespaceName(p.Metadata.Name, e.Name)
		if e.Adopt != nil {
			if n = e.Adopt.Namespace; adoptable(n) != "" {
				continue
			}
		}
		if e.Name != "" && len(validation.IsDNS1123Label(n)) == 0 && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// lenientEntries are the entries of spec.namespaces, their names and
// adopt alone, read from a spec that may be invalid; none when even
// that does not decode.
func lenientEntries(p *Parent) []lenientEntry {
	var spec struct {
		Namespaces []lenientEntry `json:"namespaces"`
	}
	if json.Unmarshal(p.Spec, &spec) != nil {
		return nil
	}
	return spec.Namespaces
}

type lenientEntry struct {
	Name  string `json:"name"`
	Adopt *struct {
		Namespace string `json:"namespace"`
	} `json:"adopt"`
}

// adoptedNamespaces are the namespaces spec.namespaces adopts, read
// leniently: each that adoptable allows.
func adoptedNamespaces(p *Parent) []string {
	var out []string
	for _, e := range lenientEntries(p) {
		if e.Adopt != nil && adoptable(e.Adopt.Namespace) == "" && !slices.Contains(out, e.Adopt.Namespace) {
			out = append(out, e.Adopt.Namespace)
		}
	}
	return out
}
