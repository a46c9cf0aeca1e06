package teamspace

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
)

// The team's several namespaces (spec.namespaces, issue #52): this file
// reads and checks the entries as the schema does, so that a spec that
// bypassed validation is named; unit.go divides the totals among the
// namespaces and Sync answers each (sync.go). What is decided:
//   - names: team-<name>--<entry>; neither a new TeamSpace's name nor an
//     entry holds "--" or begins or ends with "-", so a name splits one
//     way only. A TeamSpace named with "--" before the rule keeps working;
//     its namespace may be another's entry, which that entry then finds
//     taken (NamespaceConflict, the other namespaces are made).
//   - shares: pods and cpu named by every entry; memory, ephemeral storage
//     and each count where the spec sets the total, named or not (not
//     named: an equal part of what the named shares leave, with
//     team-<name>'s); the named add up to less than each total.
//   - objects: every namespace holds a ConfigMap itself; team-<name>'s
//     comes out of the total (as today), an extra namespace's on top of
//     its share. resourcequotas is not divided (objectCount.whole): every
//     namespace holds the count.

// NamespaceShare is one entry of spec.namespaces in canonical form: one
// more namespace of the team (ExtraNamespaceName) and its share of the
// team's totals. Memory, EphemeralStorage and a kind of Objects are what
// the entry names ("" or absent: an equal part, with team-<name>, of what
// the named shares leave).
type NamespaceShare struct {
	Name              string
	Pods, CPU, Memory string
	EphemeralStorage  string
	Objects           map[corev1.ResourceName]int64
}

// ExtraNamespaceName is the namespace of entry of TeamSpace teamspace:
// team-<teamspace>--<entry>. Neither part may hold the separator (nor
// begin or end with "-"), so no two TeamSpaces' namespaces share a name.
func ExtraNamespaceName(teamspace, entry string) string {
	return NamespacePrefix + teamspace + v1alpha1.NamespaceSeparator + entry
}

// checkNamespaces checks spec.namespaces against the spec's totals (spec
// holds those already checked; a total that was invalid is not summed
// against) and returns the shares in spec order.
func checkNamespaces(entries []v1alpha1.NamespaceEntry, spec Spec) ([]NamespaceShare, []string) {
	if len(entries) == 0 {
		return nil, nil
	}
	var problems []string
	if len(entries) > v1alpha1.MaxNamespaces {
		problems = append(problems, fmt.Sprintf("spec.namespaces: %d entries, at most %d", len(entries), v1alpha1.MaxNamespaces))
	}
	shares := make([]NamespaceShare, 0, len(entries))
	seen := map[string]bool{}
	for i, e := range entries {
		at := fmt.Sprintf("spec.namespaces[%d]", i)
		s := NamespaceShare{Name: e.Name}
		if errs := validation.IsDNS1123Label(e.Name); len(errs) > 0 || strings.Contains(e.Name, v1alpha1.NamespaceSeparator) || len(e.Name) > v1alpha1.MaxNamespacePartsLength-1 {
			problems = append(problems, fmt.Sprintf("%s.name %q must be a DNS-1123 label of at most %d characters without %q", at, e.Name, v1alpha1.MaxNamespacePartsLength-1, v1alpha1.NamespaceSeparator))
		} else if seen[e.Name] {
			problems = append(problems, fmt.Sprintf("%s.name %q is named twice", at, e.Name))
		}
		seen[e.Name] = true
		if e.Pods < 1 || e.Pods > v1alpha1.MaxPods-1 {
			problems = append(problems, fmt.Sprintf("%s.pods must be from 1 to %d, got %d", at, v1alpha1.MaxPods-1, e.Pods))
		} else {
			s.Pods = strconv.Itoa(int(e.Pods))
		}
		var err error
		if s.CPU, err = CanonicalQuantity(e.CPU); err != nil {
			problems = append(problems, at+".cpu "+err.Error())
		}
		for _, q := range []struct {
			field, value, total string
			into                *string
		}{
			{"memory", e.Memory, spec.Memory, &s.Memory},
			{"ephemeralStorage", e.EphemeralStorage, spec.EphemeralStorage, &s.EphemeralStorage},
		} {
			switch {
			case q.value != "" && q.total == "":
				problems = append(problems, fmt.Sprintf("%s.%s is a share of spec.%s, which is unset", at, q.field, q.field))
			case q.value != "":
				if *q.into, err = CanonicalQuantity(q.value); err != nil {
					problems = append(problems, at+"."+q.field+" "+err.Error())
				}
			}
		}
		if len(e.Objects) > 0 {
			s.Objects = map[corev1.ResourceName]int64{}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Objects)) {
			n := int64(e.Objects[k])
			i := slices.IndexFunc(objectCounts, func(c objectCount) bool { return string(c.name) == k })
			if i >= 0 && objectCounts[i].whole {
				problems = append(problems, fmt.Sprintf("%s.objects.%s is not divided: every namespace holds spec.objects.%s", at, k, k))
				continue
			}
			if _, counted := spec.Objects[corev1.ResourceName(k)]; i < 0 || !counted {
				problems = append(problems, fmt.Sprintf("%s.objects.%s is a share of a count spec.objects does not keep", at, k))
				continue
			}
			// The namespace's own objects come on top of its share.
			if n < 0 || n > MaxObjectCount {
				problems = append(problems, fmt.Sprintf("%s.objects.%s must be from 0 to %d, got %d", at, k, MaxObjectCount, n))
				continue
			}
			s.Objects[corev1.ResourceName(k)] = n
		}
		shares = append(shares, s)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return shares, checkShareSums(shares, spec)
}

// checkShareSums says where the shares add up to the totals or more:
// team-<name> keeps the rest, at least one pod and some of each quantity,
// and the objects it holds itself (a ConfigMap, two quotas).
func checkShareSums(shares []NamespaceShare, spec Spec) []string {
	var problems []string
	// The sum of the shares entries name ("" is none).
	sum := func(get func(NamespaceShare) string) resource.Quantity {
		var total resource.Quantity
		for _, s := range shares {
			if v := get(s); v != "" {
				total.Add(resource.MustParse(v))
			}
		}
		return total
	}
	for _, q := range []struct {
		field, total string
		get          func(NamespaceShare) string
	}{
		{"pods", spec.Pods, func(s NamespaceShare) string { return s.Pods }},
		{"cpu", spec.CPU, func(s NamespaceShare) string { return s.CPU }},
		{"memory", spec.Memory, func(s NamespaceShare) string { return s.Memory }},
		{"ephemeralStorage", spec.EphemeralStorage, func(s NamespaceShare) string { return s.EphemeralStorage }},
	} {
		if q.total == "" {
			continue
		}
		if got := sum(q.get); got.Cmp(resource.MustParse(q.total)) >= 0 {
			problems = append(problems, fmt.Sprintf("spec.namespaces: the namespaces' %s add up to %s, not less than spec.%s %s (team-<name> keeps the rest)", q.field, got.String(), q.field, q.total))
		}
	}
	for _, c := range objectCounts {
		total, ok := spec.Objects[c.name]
		if !ok {
			continue
		}
		// team-<name> holds the kind's minimum itself (an extra
		// namespace's own come on top of its share).
		var got int64
		for _, s := range shares {
			got += s.Objects[c.name]
		}
		if got > total-c.min {
			problems = append(problems, fmt.Sprintf("spec.namespaces: the namespaces' objects.%s add up to %d, more than spec.objects.%s %d less the %d team-<name> holds itself", c.name, got, c.name, total, c.min))
		}
	}
	return problems
}

// checkNamespaceNames says which entries would make a namespace name
// longer than a DNS-1123 label with this TeamSpace's name.
func checkNamespaceNames(teamspace string, shares []NamespaceShare) []string {
	var problems []string
	for i, s := range shares {
		if n := ExtraNamespaceName(teamspace, s.Name); len(n) > validation.DNS1123LabelMaxLength {
			problems = append(problems, fmt.Sprintf("spec.namespaces[%d].name: namespace %s would be %d characters, at most %d (the TeamSpace's name and the entry's together at most %d)", i, n, len(n), validation.DNS1123LabelMaxLength, v1alpha1.MaxNamespacePartsLength))
		}
	}
	return problems
}
