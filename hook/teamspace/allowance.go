package teamspace

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A requester's allowance: how many TeamSpaces one requester may hold, and
// the totals of pods, cpu and memory across them. The limits of one
// TeamSpace are the API server's (hack/deploy/limits.yaml); a total is
// not, since admission sees one object at a time. So the engine shows the
// hook, as related objects (Customize), the limits ConfigMap and the other
// TeamSpaces of the same requester, and the hook gives children only to the
// oldest that fit the allowance.
const (
	// RequesterLabel selects the TeamSpaces of one requester. The API
	// server sets it (hack/deploy/requested-by.yaml) on those of a
	// requester who is not exempt, from the requested-by annotation
	// reduced to a label value; several requesters may share a value, so
	// the hook counts only TeamSpaces whose annotation is the same.
	// Without it (an exempt requester) a TeamSpace is not counted.
	RequesterLabel = Group + "/requester"
	// RequestedByAnnotation records who asked for a TeamSpace.
	RequestedByAnnotation = Group + "/requested-by"

	// LimitsNamespace and LimitsName are the platform limits ConfigMap,
	// the parameter of the admission policies (hack/deploy/limits.yaml).
	LimitsNamespace = "teamspace-system"
	LimitsName      = "teamspace-limits"

	// Keys of the limits ConfigMap for a requester's allowance; a key left
	// out or empty bounds nothing.
	KeyMaxTeamSpaces = "maxTeamSpacesPerRequester"
	KeyMaxPods       = "maxPodsPerRequester"
	KeyMaxCPU        = "maxCPUPerRequester"
	KeyMaxMemory     = "maxMemoryPerRequester"

	// ReasonAllowanceExceeded: the TeamSpace does not fit its requester's
	// allowance beside their older ones.
	ReasonAllowanceExceeded = "RequesterAllowanceExceeded"
	// ReasonLimitsInvalid: the allowance cannot be read (the ConfigMap is
	// missing, or a key is not a number or quantity); nothing new is given.
	ReasonLimitsInvalid = "LimitsInvalid"
)

var (
	limitsKey     = "ConfigMap.v1"
	teamSpacesKey = Kind + "." + APIVersion
)

// allowance is the parsed allowance; a nil bound bounds nothing.
type allowance struct {
	teamSpaces, pods *int64
	cpu, memory      *resource.Quantity
}

// holding is what one TeamSpace takes from its requester's allowance.
type holding struct {
	pods        int64
	cpu, memory resource.Quantity
	// memorySet: spec.memory is set; unset, memory is unbounded.
	memorySet bool
}

// totals are a requester's holdings within the allowance.
type totals struct {
	teamSpaces, pods int64
	cpu, memory      resource.Quantity
}

func limitsSource() string { return "ConfigMap " + LimitsNamespace + "/" + LimitsName }

// parseAllowance reads the allowance keys of the limits ConfigMap's data.
func parseAllowance(data map[string]string) (allowance, error) {
	var a allowance
	var problems []string
	count := func(key string) *int64 {
		v := strings.TrimSpace(data[key])
		if v == "" {
			return nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			problems = append(problems, fmt.Sprintf("key %s is %q, not a whole number", key, data[key]))
			return nil
		}
		return &n
	}
	quantity := func(key string) *resource.Quantity {
		v := strings.TrimSpace(data[key])
		if v == "" {
			return nil
		}
		q, err := resource.ParseQuantity(v)
		if err != nil || q.Sign() < 0 {
			problems = append(problems, fmt.Sprintf("key %s is %q, not a quantity", key, data[key]))
			return nil
		}
		return &q
	}
	a.teamSpaces, a.pods = count(KeyMaxTeamSpaces), count(KeyMaxPods)
	a.cpu, a.memory = quantity(KeyMaxCPU), quantity(KeyMaxMemory)
	if len(problems) > 0 {
		return a, fmt.Errorf("%s: %s", limitsSource(), strings.Join(problems, "; "))
	}
	return a, nil
}

// bounded reports whether the allowance bounds anything.
func (a allowance) bounded() bool {
	return a.teamSpaces != nil || a.pods != nil || a.cpu != nil || a.memory != nil
}

func holdingOf(spec Spec) holding {
	h := holding{cpu: resource.MustParse(spec.CPU)}
	h.pods, _ = strconv.ParseInt(spec.Pods, 10, 64)
	if spec.Memory != "" {
		h.memory, h.memorySet = resource.MustParse(spec.Memory), true
	}
	return h
}

// exceeds names what adding h to t would take beyond the allowance, empty
// when it fits.
func (a allowance) exceeds(t totals, h holding) []string {
	var over []string
	if a.teamSpaces != nil && t.teamSpaces+1 > *a.teamSpaces {
		over = append(over, fmt.Sprintf("TeamSpaces %d > %d (key %s)", t.teamSpaces+1, *a.teamSpaces, KeyMaxTeamSpaces))
	}
	if a.pods != nil && t.pods+h.pods > *a.pods {
		over = append(over, fmt.Sprintf("pods %d > %d (key %s)", t.pods+h.pods, *a.pods, KeyMaxPods))
	}
	// quantity adds what h asks to what t holds and names the sum if it
	// is above bound.
	quantity := func(what string, held, asked resource.Quantity, bound *resource.Quantity, key string) {
		sum := held.DeepCopy()
		sum.Add(asked)
		if sum.Cmp(*bound) > 0 {
			over = append(over, fmt.Sprintf("%s %s > %s (key %s)", what, sum.String(), bound.String(), key))
		}
	}
	if a.cpu != nil {
		quantity("cpu", t.cpu, h.cpu, a.cpu, KeyMaxCPU)
	}
	switch {
	case a.memory == nil:
	case !h.memorySet:
		over = append(over, fmt.Sprintf("memory unbounded (spec.memory unset) > %s (key %s)", a.memory.String(), KeyMaxMemory))
	default:
		quantity("memory", t.memory, h.memory, a.memory, KeyMaxMemory)
	}
	return over
}

func (t *totals) add(h holding) {
	t.teamSpaces++
	t.pods += h.pods
	t.cpu.Add(h.cpu)
	t.memory.Add(h.memory)
}

func (t totals) String() string {
	return fmt.Sprintf("TeamSpaces %d, pods %d, cpu %s, memory %s", t.teamSpaces, t.pods, t.cpu.String(), t.memory.String())
}

// held is one TeamSpace of the requester, in the order they are served.
type held struct {
	meta *Meta
	spec Spec
}

// requester is who asked for the TeamSpace, if its requester is counted:
// the label the API server sets and the annotation it records.
func (r *Request) requester() (label, name string, counted bool) {
	m := &r.Parent.Metadata
	label, counted = m.Labels[RequesterLabel]
	name = m.Annotations[RequestedByAnnotation]
	return label, name, counted && name != ""
}

// overAllowance says why the TeamSpace, whose valid spec is spec, gets no
// new children: it does not fit its requester's allowance beside their
// older TeamSpaces, or the allowance cannot be read. TeamSpaces are served
// oldest first (creation time, then name); each one that fits is counted,
// one that does not is skipped, so a new TeamSpace never takes from an
// older one. Every TeamSpace of the requester counts, the deleting ones
// too: their namespaces are there until they are gone.
func (r *Request) overAllowance(spec Spec) (reason, msg string, over bool) {
	label, name, counted := r.requester()
	if !counted {
		return "", "", false
	}
	cm := r.Related[limitsKey][LimitsNamespace+"/"+LimitsName]
	if cm == nil {
		return ReasonLimitsInvalid, fmt.Sprintf("%s is missing: the allowance of requester %s cannot be read; nothing new is created until the platform restores it", limitsSource(), name), true
	}
	a, err := parseAllowance(cm.Data)
	if err != nil {
		return ReasonLimitsInvalid, fmt.Sprintf("%v: the allowance of requester %s cannot be read; nothing new is created until the platform fixes it", err, name), true
	}
	if !a.bounded() {
		return "", "", false
	}
	self := held{&r.Parent.Metadata, spec}
	all := []held{self}
	for _, o := range r.Related[teamSpacesKey] {
		m := &o.Metadata
		if m.UID == self.meta.UID || m.Labels[RequesterLabel] != label || m.Annotations[RequestedByAnnotation] != name {
			continue
		}
		s, err := ParseSpec(o.Spec)
		if err != nil {
			continue // it gets no new children either (syncInvalid)
		}
		all = append(all, held{m, s})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i].meta, all[j].meta
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	var t totals
	var skipped []string
	for _, s := range all {
		h := holdingOf(s.spec)
		exceeded := a.exceeds(t, h)
		if s.meta == self.meta {
			if len(exceeded) == 0 {
				return "", "", false
			}
			msg = fmt.Sprintf("beyond the allowance of requester %s (%s): their older TeamSpaces within it hold %s; this one would bring %s", name, limitsSource(), t, strings.Join(exceeded, ", "))
			if len(skipped) > 0 {
				msg += fmt.Sprintf(" (older ones beyond it too: %s)", strings.Join(skipped, ", "))
			}
			return ReasonAllowanceExceeded, msg, true
		}
		if len(exceeded) == 0 {
			t.add(h)
		} else {
			skipped = append(skipped, s.meta.Name)
		}
	}
	return "", "", false // unreachable: self is in all
}

// syncOverAllowance answers a TeamSpace beyond its requester's allowance,
// or whose allowance cannot be read: what it already has is kept as it is,
// nothing new is created.
func syncOverAllowance(r *Request, resp *Response, reason, msg string) *Response {
	kept := keepChildren(r, resp, false)
	switch {
	case r.observedNamespace() != nil:
		msg += fmt.Sprintf("; keeping what it has as it is: %s", strings.Join(append([]string{"namespace " + NamespaceName(r.Parent.Metadata.Name)}, kept...), ", "))
	case reason == ReasonAllowanceExceeded:
		msg += "; no namespace until one of them is deleted or the platform raises the allowance"
	}
	resp.setReady(r, metav1.ConditionFalse, reason, msg)
	return resp
}
