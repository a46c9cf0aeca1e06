package teamspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Limits of spec.pods, as in crd.yaml.
const (
	MinPods = 1
	MaxPods = 50
	// DefaultCPU is spec.cpu when the API server did not default it (the
	// CRD's default).
	DefaultCPU = "1"
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
}

// Pod Security levels of spec.podSecurity.
const DefaultPodSecurity = "baseline"

var podSecurityLevels = []string{"privileged", "baseline", "restricted"}

// SpecError lists everything wrong with a spec, each problem naming its field.
type SpecError struct{ Problems []string }

func (e *SpecError) Error() string { return strings.Join(e.Problems, "; ") }

// ParseSpec validates the raw spec the way crd.yaml does. It is needed
// although the API server validates too: validation can be bypassed (an
// older CRD, a direct etcd write), and then the hook must say what is wrong
// instead of acting on it.
func ParseSpec(raw json.RawMessage) (Spec, error) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Spec{}, &SpecError{[]string{"spec is missing"}}
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Spec{}, &SpecError{[]string{"spec must be an object"}}
	}
	var spec Spec
	var problems []string
	pods, err := parsePods(fields["pods"])
	if err != nil {
		problems = append(problems, "spec.pods "+err.Error())
	}
	spec.Pods = pods
	cpu, err := parseCPU(fields["cpu"])
	if err != nil {
		problems = append(problems, "spec.cpu "+err.Error())
	}
	spec.CPU = cpu
	mem, err := parseMemory(fields["memory"])
	if err != nil {
		problems = append(problems, "spec.memory "+err.Error())
	}
	spec.Memory = mem
	if err == nil && spec.Pods != "" && spec.CPU != "" {
		problems = append(problems, parseDefaults(fields["defaults"], &spec)...)
	}
	owners, ownerProblems := parseOwners(fields["owners"])
	spec.Owners, spec.ReservedOwners = withoutReserved(owners)
	problems = append(problems, ownerProblems...)
	level, err := parsePodSecurity(fields["podSecurity"])
	if err != nil {
		problems = append(problems, "spec.podSecurity "+err.Error())
	}
	spec.PodSecurity = level
	iso, err := parseNetworkIsolation(fields["networkIsolation"])
	if err != nil {
		problems = append(problems, "spec.networkIsolation "+err.Error())
	}
	spec.NetworkIsolation = iso
	if err := parseEphemeralStorage(fields["ephemeralStorage"], &spec); err != nil {
		problems = append(problems, "spec.ephemeralStorage "+err.Error())
	}
	objects, objectProblems := parseObjects(fields["objects"])
	spec.Objects = objects
	problems = append(problems, objectProblems...)
	if len(problems) > 0 {
		return Spec{}, &SpecError{problems}
	}
	return spec, nil
}

func parsePods(raw json.RawMessage) (string, error) {
	if raw == nil {
		return "", fmt.Errorf("is required (an integer from %d to %d)", MinPods, MaxPods)
	}
	var n json.Number
	// json.Number would also take the string "4": a quoted number is wrong.
	if raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return "", fmt.Errorf("must be an integer from %d to %d, got %s", MinPods, MaxPods, raw)
	}
	f, err := strconv.ParseFloat(n.String(), 64)
	if err != nil || f != math.Trunc(f) {
		return "", fmt.Errorf("must be an integer from %d to %d, got %s", MinPods, MaxPods, n)
	}
	if f < MinPods || f > MaxPods {
		return "", fmt.Errorf("must be from %d to %d, got %s", MinPods, MaxPods, n)
	}
	return strconv.Itoa(int(f)), nil
}

func parseCPU(raw json.RawMessage) (string, error) {
	if raw == nil {
		return DefaultCPU, nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a quantity string such as \"500m\" or \"2\", got %s", raw)
	}
	return CanonicalQuantity(s)
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

// parseMemory reads the optional spec.memory: "" when unset.
func parseMemory(raw json.RawMessage) (string, error) {
	if raw == nil || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", fmt.Errorf("must be a quantity string such as \"512Mi\" or \"2Gi\", got %s", raw)
	}
	return CanonicalQuantity(s)
}

func parsePodSecurity(raw json.RawMessage) (string, error) {
	if raw == nil || string(raw) == "null" {
		return DefaultPodSecurity, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		for _, l := range podSecurityLevels {
			if s == l {
				return s, nil
			}
		}
	}
	return "", fmt.Errorf("must be one of %s, got %s", strings.Join(podSecurityLevels, ", "), raw)
}

func parseNetworkIsolation(raw json.RawMessage) (bool, error) {
	if raw == nil || string(raw) == "null" {
		return true, nil
	}
	var b bool
	if err := json.Unmarshal(raw, &b); err != nil {
		return false, fmt.Errorf("must be true or false, got %s", raw)
	}
	return b, nil
}
