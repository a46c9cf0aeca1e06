package teamspace

import (
	"fmt"
	"strings"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Bounds and defaults of the API (hook/api/v1alpha1, where crd.yaml's
// markers spell them too).
const (
	MinPods            = v1alpha1.MinPods
	MaxPods            = v1alpha1.MaxPods
	DefaultCPU         = v1alpha1.DefaultCPU
	DefaultPodSecurity = v1alpha1.DefaultPodSecurity
	MaxOwners          = v1alpha1.MaxOwners
	MaxObjectCount     = v1alpha1.MaxObjectCount
)

// Spec is a valid TeamSpace spec with its values in the canonical form the
// API server stores in a ResourceQuota, so an unchanged spec never makes the
// engine send a write.
type Spec struct {
	Pods string // e.g. "4"
	CPU  string // e.g. "500m" for "0.5"
	// Memory is requests.memory of the quota, "" when spec.memory is unset
	// (then no memory key appears in any child).
	Memory string
	// DefaultRequestCPU and DefaultRequestMemory are the LimitRange's
	// container defaultRequest (DefaultRequestMemory "" without Memory).
	DefaultRequestCPU, DefaultRequestMemory string
	// Owners are the subjects of the owners' binding, in spec order,
	// without the reserved ones.
	Owners []Owner
	// ReservedOwners name the entries of spec.owners that are never bound
	// (reservedOwner), e.g. `spec.owners[2] (Group system:authenticated)`.
	ReservedOwners []string
	// PodSecurity is the namespace's enforced Pod Security level.
	PodSecurity string
	// NetworkIsolation asks for the isolation policy (networkpolicy.go).
	NetworkIsolation bool
	// EphemeralStorage is the namespace's total ephemeral storage, requests
	// and limits alike (team-objects), "" when spec.ephemeralStorage is
	// unset; DefaultEphemeralStorage is a container's default request and
	// limit of it (the LimitRange), total / pods.
	EphemeralStorage, DefaultEphemeralStorage string
	// Objects are the object counts of team-objects by quota resource name
	// (objects.go), nil when spec.objects is unset or empty.
	Objects map[corev1.ResourceName]int64
	// NamespaceAnnotations are the namespace's annotations from spec.allow
	// and spec.nodeSelector (allow.go), nil when neither sets anything.
	NamespaceAnnotations map[string]string
	// Namespaces are spec.namespaces' shares (namespaces.go), nil when it
	// is unset or empty.
	Namespaces []NamespaceShare
	// cpuDefault and memoryDefault are spec.defaults' values ("" unset),
	// which apply in every namespace whose share they fit (unit.go).
	cpuDefault, memoryDefault string
}

// SpecError lists everything wrong with a spec, each problem naming its field.
type SpecError struct{ Problems []string }

func (e *SpecError) Error() string { return strings.Join(e.Problems, "; ") }

// CanonicalQuantity returns a positive quantity in the form the API server
// stores it ("0.5" → "500m", "1000m" → "1"). The engine compares the answer
// with the live object as JSON, so any other spelling would be written again
// on every sync.
func CanonicalQuantity(s string) (string, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return "", fmt.Errorf("%q is not a quantity (such as \"500m\", \"0.5\" or \"2\")", s)
	}
	if q.Sign() <= 0 {
		return "", fmt.Errorf("%q must be positive", s)
	}
	return q.String(), nil
}
