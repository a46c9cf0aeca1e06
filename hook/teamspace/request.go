// Package teamspace is the pure heart of the hook: it turns a request from
// Metacontroller into the answer, with no I/O, no clock and no randomness, so
// the same request always gives byte-identical answers (a status that changed
// on every call would make the engine write and re-sync forever).
//
// Sync is stages with one value passed between them: observe (observe.go,
// the one reader of what the engine shows), parse (parse.go), plan and
// answer (sync.go), readiness (ready.go, the Ready reasons as one ordered
// list) and the status; Finalize reads through the same observe stage.
// The DecoratorControllers' endpoints are apart (decorators.go).
package teamspace

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The API this hook serves and the children it manages.
const (
	// NamespacePrefix + name is the team's namespace.
	NamespacePrefix = "team-"
	// MaxNameLength keeps NamespacePrefix+name within a DNS-1123 label.
	MaxNameLength = validation.DNS1123LabelMaxLength - len(NamespacePrefix)
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
// before BENCHMARKS.md kept current figures only: -20% allocations,
// -13..-17% per sync).
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
