// Package teamspace is the pure heart of the hook: it turns a request from
// Metacontroller into the answer, with no I/O, no clock and no randomness, so
// the same request always gives byte-identical answers (a status that changed
// on every call would make the engine write and re-sync forever).
package teamspace

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The API this hook serves and the children it manages.
const (
	// NamespacePrefix + name is the team's namespace.
	NamespacePrefix = "team-"
	// MaxNameLength keeps NamespacePrefix+name within a DNS-1123 label.
	MaxNameLength = validation.DNS1123LabelMaxLength - len(NamespacePrefix)
	// LastAppliedAnnotation is where the engine keeps the child it last applied.
	LastAppliedAnnotation = "metacontroller.k8s.io/last-applied-configuration"
)

// Request is what the engine sends to the sync, finalize and customize hooks.
// Only the parts the hook reads are decoded; unknown fields (the controller
// object, `finalizing`, fields of later engine versions) are ignored.
type Request struct {
	Parent *Parent `json:"parent"`
	// Children and Related are keyed by the engine's type key (childType.key,
	// e.g. "Namespace.v1"), then by name or namespace/name.
	Children map[string]ObjectMap `json:"children"`
	Related  map[string]ObjectMap `json:"related"`
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

// Object is an observed child or related object: its slim metadata, its
// phase, and the top-level content fields child types read, kept raw. Each
// child type decodes its own fields into its k8s.io/api type (its decode in
// children.go's registry); the raw form costs one scan here instead of
// building trees the hook may never read.
type Object struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   Meta            `json:"metadata"`
	Spec       json.RawMessage `json:"spec,omitempty"`
	RoleRef    json.RawMessage `json:"roleRef,omitempty"`
	Subjects   json.RawMessage `json:"subjects,omitempty"`
	Rules      json.RawMessage `json:"rules,omitempty"`
	// Data is a ConfigMap's (the limits, a template) or a Secret's
	// (base64, as stored); BinaryData a ConfigMap's, Type a Secret's:
	// a template's content (copies.go).
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string]string `json:"binaryData,omitempty"`
	Type       string            `json:"type,omitempty"`
	Status     struct {
		Phase string `json:"phase"`
		// Hard and Used are a ResourceQuota's figures as its controller
		// reports them (see Usage).
		Hard corev1.ResourceList `json:"hard,omitempty"`
		Used corev1.ResourceList `json:"used,omitempty"`
	} `json:"status"`
}

// Meta is the part of an object's metadata the hook reads. Decoding only
// this, rather than metav1.ObjectMeta, skips the bulk of every request: the
// fieldsV1 trees of managedFields and the labels the hook never looks at
// are scanned but not built: most of a request's decoding cost (measured
// in the history of BENCHMARKS.md: -20% allocations, -13..-17% per sync).
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

// observed is the child of type t in unit u the engine shows for this
// TeamSpace (nil if none). A request recorded before the controller
// declared a child type has no key for it: that is the same as none
// observed.
func (r *Request) observed(t *childType, u *unit) *Object {
	if t.viaDecorator && r.quotasViaDecorator() {
		return r.reportedQuota(t, u)
	}
	return r.Children[t.key][t.ref(u)]
}

// quotasViaDecorator reports whether the CompositeController leaves the
// quotas to the DecoratorController (quotas.go): it declares no
// ResourceQuota child, and the engine sends every type it declares. A
// CompositeController that still declares them (one applied before, while
// the hook is upgraded first) gets them answered as children, as it always
// did: without them it would delete every quota.
func (r *Request) quotasViaDecorator() bool {
	_, declared := r.Children[quotaType.key]
	return !declared
}

// quotasCarrier is the child of a unit that carries its quotas for the
// DecoratorController, and its report of them (quotas.go): the LimitRange.
var quotasCarrier = limitRangeType

// carrier is unit u's observed quotas carrier, nil if none.
func (r *Request) carrier(u *unit) *Object {
	return r.Children[quotasCarrier.key][quotasCarrier.ref(u)]
}

// reportedQuota is the quota of type t in unit u as the DecoratorController
// reports it on the observed carrier (QuotasObservedAnnotation): its
// name, namespace, the TeamSpace label and spec.hard; nil when the
// carrier is not observed or the report has no such quota.
func (r *Request) reportedQuota(t *childType, u *unit) *Object {
	carrier := r.carrier(u)
	if carrier == nil {
		return nil
	}
	reported, err := quotasOf(carrier.Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)
	hard, ok := reported[t.name(u)]
	if err != nil || !ok {
		return nil
	}
	spec, _ := json.Marshal(corev1.ResourceQuotaSpec{Hard: hard})
	o := &Object{APIVersion: t.apiVersion, Kind: t.kind, Spec: spec, Metadata: Meta{
		Name: t.name(u), Namespace: u.namespace, Labels: map[string]string{v1alpha1.TeamSpaceLabel: u.teamspace},
	}}
	// As last applied: what the carrier was last asked to hold, for
	// what is kept as last applied (childType.kept).
	var last metav1.PartialObjectMetadata
	if json.Unmarshal([]byte(carrier.Metadata.Annotations[LastAppliedAnnotation]), &last) == nil {
		if applied, err := quotasOf(last.Annotations, v1alpha1.QuotasAnnotation); err == nil {
			if hard, ok := applied[t.name(u)]; ok {
				b, _ := json.Marshal(corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard}})
				o.Metadata.Annotations = map[string]string{LastAppliedAnnotation: string(b)}
			}
		}
	}
	return o
}

// teamUnit is team-<name> without a spec: for what depends on names only.
func (r *Request) teamUnit() *unit { return mainUnit(r.Parent.Metadata.Name, Spec{}) }

// foreign is the object of type t with the name of this TeamSpace's child
// in unit u that the engine shows only as a related object (the customize
// hook asks for it by name) because another owner holds it, and who that
// is; nil when there is none or it is the TeamSpace's own. The engine
// never adopts it.
func (r *Request) foreign(t *childType, u *unit) (*Object, string) {
	if r.observed(t, u) != nil {
		return nil, ""
	}
	o := r.Related[t.key][t.ref(u)]
	if o == nil || ownedBy(o, string(r.Parent.Metadata.UID)) {
		return nil, ""
	}
	holder := "was not created for this TeamSpace"
	for _, ref := range o.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			holder = fmt.Sprintf("is controlled by %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
	}
	return o, holder
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
