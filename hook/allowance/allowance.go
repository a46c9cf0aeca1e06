// Package allowance is a requester's allowance: how many TeamSpaces one
// requester may hold, and the totals of pods, cpu and memory across them
// (keys max*PerRequester of the limits ConfigMap). The limits of one
// TeamSpace are the API server's (hack/deploy/limits.yaml); a total is
// not, since admission sees one object at a time, so the hook gives
// children only to the oldest TeamSpaces that fit.
//
// This package is the one statement of that rule. The hook (package
// teamspace) asks it whether a TeamSpace fits; `kubectl teamspace
// allowance` asks it what a requester holds, so that the plugin never
// shows room the hook will not grant. It is pure: the callers read the
// limits and the TeamSpaces, this decides.
package allowance

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Source names the limits ConfigMap in messages.
const Source = "ConfigMap " + v1alpha1.SystemNamespace + "/" + v1alpha1.LimitsName

// Allowance is the parsed allowance; a nil bound bounds nothing.
type Allowance struct {
	teamSpaces, pods *int64
	cpu, memory      *resource.Quantity
}

// Parse reads the allowance keys of the limits ConfigMap's data.
func Parse(data map[string]string) (Allowance, error) {
	var a Allowance
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
	a.teamSpaces, a.pods = count(v1alpha1.KeyMaxTeamSpaces), count(v1alpha1.KeyMaxPods)
	a.cpu, a.memory = quantity(v1alpha1.KeyMaxCPU), quantity(v1alpha1.KeyMaxMemory)
	if len(problems) > 0 {
		return a, fmt.Errorf("%s: %s", Source, strings.Join(problems, "; "))
	}
	return a, nil
}

// Bounded reports whether the allowance bounds anything.
func (a Allowance) Bounded() bool {
	return a.teamSpaces != nil || a.pods != nil || a.cpu != nil || a.memory != nil
}

// Holding is what one TeamSpace takes from its requester's allowance: its
// totals, whatever its namespaces.
type Holding struct {
	Pods        int64
	CPU, Memory resource.Quantity
	// MemorySet: spec.memory is set; unset, memory is unbounded.
	MemorySet bool
}

// Requester is who asked for a TeamSpace, as the API server recorded it:
// the label it set and the requested-by annotation.
type Requester struct{ Label, Name string }

// RequesterOf is the requester of a TeamSpace with these labels and
// annotations, and whether it is counted: without the label (an exempt
// requester) or the annotation it is not.
func RequesterOf(labels, annotations map[string]string) (Requester, bool) {
	label, labelled := labels[v1alpha1.RequesterLabel]
	name := annotations[v1alpha1.RequestedByAnnotation]
	return Requester{label, name}, labelled && name != ""
}

// TeamSpace is one TeamSpace as the allowance sees it. A TeamSpace being
// deleted counts like any other: its namespaces are there until it is
// gone.
type TeamSpace struct {
	Name    string
	UID     types.UID
	Created metav1.Time
	// Requester and Counted are RequesterOf its metadata.
	Requester Requester
	Counted   bool
	// Holding is nil when its spec is invalid: such a TeamSpace gets no
	// new children, so it holds nothing of the allowance.
	Holding *Holding
}

// Totals are what a requester's TeamSpaces within the allowance hold.
type Totals struct {
	TeamSpaces, Pods int64
	CPU, Memory      resource.Quantity
}

func (t *Totals) add(h Holding) {
	t.TeamSpaces++
	t.Pods += h.Pods
	t.CPU.Add(h.CPU)
	t.Memory.Add(h.Memory)
}

func (t Totals) String() string {
	return fmt.Sprintf("TeamSpaces %d, pods %d, cpu %s, memory %s", t.TeamSpaces, t.Pods, t.CPU.String(), t.Memory.String())
}

// Served is one TeamSpace of a requester as it was served.
type Served struct {
	*TeamSpace
	// Before is what the older ones within the allowance hold.
	Before Totals
	// Over names what it would take beyond the allowance; empty when it
	// fits, and is counted.
	Over []string
	// Skipped are the older ones beyond the allowance, by name.
	Skipped []string
}

// Serve serves the TeamSpaces of all that are req's (counted, with the
// same label and the same annotation), oldest first (creation time, then
// name): each one that fits is counted, one that does not is skipped, so
// a new TeamSpace never takes from an older one. One with an invalid spec
// is left out. It returns each served TeamSpace and what those within the
// allowance hold together.
func Serve(a Allowance, req Requester, all []TeamSpace) ([]Served, Totals) {
	var mine []*TeamSpace
	for i := range all {
		ts := &all[i]
		if ts.Counted && ts.Requester == req && ts.Holding != nil {
			mine = append(mine, ts)
		}
	}
	sort.SliceStable(mine, func(i, j int) bool {
		a, b := mine[i], mine[j]
		if !a.Created.Equal(&b.Created) {
			return a.Created.Before(&b.Created)
		}
		return a.Name < b.Name
	})
	var t Totals
	var skipped []string
	served := make([]Served, 0, len(mine))
	for _, ts := range mine {
		s := Served{TeamSpace: ts, Before: t, Over: a.exceeds(t, *ts.Holding), Skipped: skipped}
		if len(s.Over) == 0 {
			t.add(*ts.Holding)
		} else {
			skipped = append(skipped, ts.Name)
		}
		served = append(served, s)
	}
	return served, t
}

// exceeds names what adding h to t would take beyond the allowance, empty
// when it fits.
func (a Allowance) exceeds(t Totals, h Holding) []string {
	var over []string
	if a.teamSpaces != nil && t.TeamSpaces+1 > *a.teamSpaces {
		over = append(over, fmt.Sprintf("TeamSpaces %d > %d (key %s)", t.TeamSpaces+1, *a.teamSpaces, v1alpha1.KeyMaxTeamSpaces))
	}
	if a.pods != nil && t.Pods+h.Pods > *a.pods {
		over = append(over, fmt.Sprintf("pods %d > %d (key %s)", t.Pods+h.Pods, *a.pods, v1alpha1.KeyMaxPods))
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
		quantity("cpu", t.CPU, h.CPU, a.cpu, v1alpha1.KeyMaxCPU)
	}
	switch {
	case a.memory == nil:
	case !h.MemorySet:
		over = append(over, fmt.Sprintf("memory unbounded (spec.memory unset) > %s (key %s)", a.memory.String(), v1alpha1.KeyMaxMemory))
	default:
		quantity("memory", t.Memory, h.Memory, a.memory, v1alpha1.KeyMaxMemory)
	}
	return over
}
