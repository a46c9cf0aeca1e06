// Package teamspace is the pure heart of the hook: it turns a request from
// Metacontroller into the answer, with no I/O, no clock and no randomness, so
// the same request always gives byte-identical answers (a status that changed
// on every call would make the engine write and re-sync forever).
package teamspace

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The API this hook serves and the children it manages.
const (
	APIVersion = "platform.labhub.io/v1alpha1"
	Kind       = "TeamSpace"

	// NamespacePrefix + name is the team's namespace.
	NamespacePrefix = "team-"
	// MaxNameLength keeps NamespacePrefix+name within a DNS-1123 label.
	MaxNameLength = validation.DNS1123LabelMaxLength - len(NamespacePrefix)
	// QuotaName is the ResourceQuota in every team namespace.
	QuotaName = "team-quota"
	// TeamSpaceLabel marks children with the TeamSpace they belong to.
	TeamSpaceLabel = "platform.labhub.io/teamspace"
	// LastAppliedAnnotation is where the engine keeps the child it last applied.
	LastAppliedAnnotation = "metacontroller.k8s.io/last-applied-configuration"

	// NamespaceGroup and QuotaGroup are the keys of children and related
	// objects in a request (kind.version, as the engine writes them).
	NamespaceGroup     = "Namespace.v1"
	QuotaGroup         = "ResourceQuota.v1"
	LimitRangeGroup    = "LimitRange.v1"
	RoleBindingGroup   = "RoleBinding.rbac.authorization.k8s.io/v1"
	NetworkPolicyGroup = "NetworkPolicy.networking.k8s.io/v1"
)

// Request is what the engine sends to the sync, finalize and customize hooks.
// Only the parts the hook reads are decoded; unknown fields (the controller
// object, fields of later engine versions) are ignored.
type Request struct {
	Parent     *Parent              `json:"parent"`
	Children   map[string]ObjectMap `json:"children"`
	Related    map[string]ObjectMap `json:"related"`
	Finalizing bool                 `json:"finalizing"`
}

// ObjectMap holds observed objects of one type keyed by name, or
// namespace/name for a namespaced object.
type ObjectMap map[string]*Object

// Parent is the TeamSpace as the engine observed it.
type Parent struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   Meta   `json:"metadata"`
	// Spec is kept raw: a spec that bypassed server validation must still be
	// answered (keeping what exists), not refused as a malformed request.
	Spec   json.RawMessage `json:"spec"`
	Status struct {
		Conditions []metav1.Condition `json:"conditions"`
	} `json:"status"`
}

// Object is an observed child or related object: metadata plus the few
// fields of Namespace and ResourceQuota the hook reads.
type Object struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   Meta   `json:"metadata"`
	Spec       struct {
		Hard map[string]string `json:"hard"`
		// LimitRange
		Limits any `json:"limits,omitempty"`
		// NetworkPolicy
		PodSelector any `json:"podSelector,omitempty"`
		PolicyTypes any `json:"policyTypes,omitempty"`
		Ingress     any `json:"ingress,omitempty"`
		Egress      any `json:"egress,omitempty"`
	} `json:"spec"`
	// RoleBinding
	RoleRef  any `json:"roleRef,omitempty"`
	Subjects any `json:"subjects,omitempty"`
	Status   struct {
		Phase string `json:"phase"`
	} `json:"status"`
}

// Meta is the part of an object's metadata the hook reads. Decoding only
// this, rather than metav1.ObjectMeta, skips the bulk of every request: the
// fieldsV1 trees of managedFields and the labels the hook never looks at
// are scanned but not built: most of a request's decoding cost (see
// BENCHMARKS.md appendix A.2).
type Meta struct {
	Name              string                  `json:"name"`
	Namespace         string                  `json:"namespace,omitempty"`
	UID               types.UID               `json:"uid"`
	Generation        int64                   `json:"generation,omitempty"`
	CreationTimestamp metav1.Time             `json:"creationTimestamp"`
	DeletionTimestamp *metav1.Time            `json:"deletionTimestamp,omitempty"`
	Labels            map[string]string       `json:"labels,omitempty"`
	Annotations       map[string]string       `json:"annotations,omitempty"`
	OwnerReferences   []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	// ManagedFields keeps only each entry's time (see observedAt).
	ManagedFields []ManagedFieldsTime `json:"managedFields,omitempty"`
}

// ManagedFieldsTime is the time of one managedFields entry.
type ManagedFieldsTime struct {
	Time *metav1.Time `json:"time,omitempty"`
}

// NamespaceName is the namespace a TeamSpace gets.
func NamespaceName(teamspace string) string { return NamespacePrefix + teamspace }

// observedNamespace and observedQuota find the children under the keys the
// engine uses (a namespaced child of a cluster-scoped parent is namespace/name).
func (r *Request) observedNamespace() *Object {
	return r.Children[NamespaceGroup][NamespaceName(r.Parent.Metadata.Name)]
}

func (r *Request) observedQuota() *Object {
	return r.observedInNamespace(QuotaGroup, QuotaName)
}

// observedInNamespace finds a child of the team namespace. A request
// recorded before the controller declared a child type has no key for it:
// that is the same as none observed.
func (r *Request) observedInNamespace(group, name string) *Object {
	return r.Children[group][NamespaceName(r.Parent.Metadata.Name)+"/"+name]
}

// relatedNamespace is namespace team-<name> as the customize hook asked the
// engine to show it, whoever owns it.
func (r *Request) relatedNamespace() *Object {
	return r.Related[NamespaceGroup][NamespaceName(r.Parent.Metadata.Name)]
}

// hasChildren reports whether the engine still observes any child.
func (r *Request) hasChildren() bool {
	for _, objs := range r.Children {
		if len(objs) > 0 {
			return true
		}
	}
	return false
}
