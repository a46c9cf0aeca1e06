package teamspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
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

// ParseSpec reads the raw spec through the API's type,
// v1alpha1.TeamSpaceSpec, and checks it the way crd.yaml does, plus what the
// schema cannot say, returning the values in canonical form. It is needed
// although the API server validates too: validation can be bypassed (an
// older CRD, a direct etcd write), and then the hook must say what is wrong
// instead of acting on it. Every problem is named, each with its field.
func ParseSpec(raw json.RawMessage) (Spec, error) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Spec{}, &SpecError{[]string{"spec is missing"}}
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Spec{}, &SpecError{[]string{"spec must be an object"}}
	}
	// A field of the wrong type is named by decodeSpec and then left out
	// (bad): it is not checked again as the zero value it decoded to.
	api, bad, problems := decodeSpec(fields)
	var spec Spec
	var err error
	if !bad["pods"] {
		if spec.Pods, err = checkPods(api.Pods, present(fields, "pods"), fields["pods"]); err != nil {
			problems = append(problems, "spec.pods "+err.Error())
		}
	}
	spec.CPU = DefaultCPU
	if bad["cpu"] {
		spec.CPU = ""
	} else if present(fields, "cpu") {
		if spec.CPU, err = CanonicalQuantity(api.CPU); err != nil {
			problems = append(problems, "spec.cpu "+err.Error())
		}
	}
	memoryOK := !bad["memory"]
	if memoryOK && present(fields, "memory") {
		if spec.Memory, err = CanonicalQuantity(api.Memory); err != nil {
			problems = append(problems, "spec.memory "+err.Error())
			memoryOK = false
		}
	}
	// The defaults are checked against valid totals only.
	if memoryOK && !bad["defaults"] && spec.Pods != "" && spec.CPU != "" {
		problems = append(problems, parseDefaults(api.Defaults, &spec)...)
	}
	owners, ownerProblems := checkOwners(api.Owners)
	spec.Owners, spec.ReservedOwners = withoutReserved(owners)
	problems = append(problems, ownerProblems...)
	spec.PodSecurity = DefaultPodSecurity
	if present(fields, "podSecurity") && !bad["podSecurity"] {
		spec.PodSecurity = string(api.PodSecurity)
		if !slices.Contains(v1alpha1.PodSecurityLevels, api.PodSecurity) {
			problems = append(problems, "spec.podSecurity "+wrongType["podSecurity"]+", got "+string(fields["podSecurity"]))
		}
	}
	spec.NetworkIsolation = api.NetworkIsolation == nil || *api.NetworkIsolation
	if present(fields, "ephemeralStorage") && !bad["ephemeralStorage"] {
		if err := checkEphemeralStorage(api.EphemeralStorage, &spec); err != nil {
			problems = append(problems, "spec.ephemeralStorage "+err.Error())
		}
	}
	objects, objectProblems := checkObjects(api.Objects, fields["objects"])
	spec.Objects = objects
	problems = append(problems, objectProblems...)
	annotations, allowProblems := checkAllowAndNodes(api.Allow, api.NodeSelector)
	spec.NamespaceAnnotations = annotations
	problems = append(problems, allowProblems...)
	// The shares are summed against totals that are valid.
	if len(problems) == 0 && !bad["namespaces"] {
		shares, shareProblems := checkNamespaces(api.Namespaces, spec)
		spec.Namespaces = shares
		problems = append(problems, shareProblems...)
	}
	if len(problems) > 0 {
		return Spec{}, &SpecError{problems}
	}
	// The container defaults of the whole spec: team-<name>'s without
	// entries (units gives each namespace its own, by the same rule).
	spec.DefaultRequestCPU, spec.DefaultRequestMemory, spec.DefaultEphemeralStorage = unitDefaults(spec, spec)
	return spec, nil
}

// checkPods checks spec.pods (raw for the message) and returns it as the
// quota writes it.
func checkPods(pods int32, set bool, raw json.RawMessage) (string, error) {
	if !set {
		return "", fmt.Errorf("is required (an integer from %d to %d)", MinPods, MaxPods)
	}
	if pods < MinPods || pods > MaxPods {
		return "", fmt.Errorf("must be from %d to %d, got %s", MinPods, MaxPods, bytes.TrimSpace(raw))
	}
	return strconv.Itoa(int(pods)), nil
}

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
