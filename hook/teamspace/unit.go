package teamspace

import (
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// unit is one namespace of a TeamSpace and the part of the spec it gets:
// team-<name> with what the entries of spec.namespaces leave of the
// totals, or one entry with its share. What a namespace holds (the
// namespace itself, its quotas, LimitRange, owners' binding and
// isolation: every type that is not once) is answered once per unit, each
// built from the unit's spec as a TeamSpace without entries is built from
// its own.
type unit struct {
	teamspace string
	// namespace is team-<name> or team-<name>--<entry>.
	namespace string
	// entry is the entry's name, "" for team-<name>.
	entry string
	// spec is the TeamSpace's spec with the totals (pods, cpu, memory,
	// ephemeral storage, object counts) and the defaults derived from them
	// replaced by the unit's part; everything else is the TeamSpace's.
	spec Spec
	// copies are the platform's templates copied into the namespace,
	// taken those whose name is a child's of its own (copies.go); none
	// while the spec is invalid.
	copies, taken []*template
	// copiesSeen counts the copies the engine shows in the namespace, by
	// the team-objects key that counts them.
	copiesSeen map[corev1.ResourceName]int64
	// adopted: the namespace existed before the TeamSpace and is taken in
	// (adopt.go): never the TeamSpace's child, and nothing of the team's
	// in it is changed; enforce raises its Pod Security level from warn
	// and audit to enforce.
	adopted, enforce bool
	// types are the child types an adopted namespace holds (adoptedTypes:
	// not the namespace, nor a name the team uses there, takenNames), nil
	// for every other namespace (perNamespaceTypes).
	types      []*childType
	takenNames []v1alpha1.KindName
	// foundQuotas are the quotas of the team's own in an adopted
	// namespace: team-objects' resourcequotas count is raised by as many.
	foundQuotas int64
}

// inside are the child types answered once per namespace for unit u.
func (u *unit) inside() []*childType {
	if u.adopted {
		return u.types
	}
	return perNamespaceTypes
}

// mainUnit is team-<name> for a spec (zero while the spec is invalid).
func mainUnit(teamspace string, spec Spec) *unit {
	return &unit{teamspace: teamspace, namespace: NamespaceName(teamspace), spec: spec}
}

// teamNamespaces are the namespaces of a valid spec: team-<name> first,
// then the entries' in spec order.
func teamNamespaces(teamspace string, spec Spec) []string {
	names := []string{NamespaceName(teamspace)}
	for _, s := range spec.Namespaces {
		names = append(names, entryNamespace(teamspace, s))
	}
	return names
}

// units divides a valid spec into its namespaces: team-<name> first, then
// one per entry in spec order, each complete (its share, what team-<name>
// holds back for the namespaces no entry asks for, its container
// defaults) and not changed after. Without entries, and nothing held back,
// it is team-<name> with the spec as it is, so that such a TeamSpace
// answers what it always did. held is what each namespace no entry asks
// for holds as last applied (see reserve).
//
// Each quantity and count is divided so that the namespaces' quotas add up
// to the total exactly (the schema keeps the named shares below it):
// an entry's named share is its own; the rest is divided equally, rounded
// down, among team-<name> and the entries that name none, and team-<name>
// takes what rounding leaves. Object counts differ: every namespace holds
// its own ConfigMap (objectCounts' minimum), team-<name> out of the
// total, an extra namespace on top of its share; resourcequotas is not
// divided (objectCount.whole).
func units(teamspace string, spec Spec, held []corev1.ResourceList) []*unit {
	main := mainUnit(teamspace, spec)
	if len(spec.Namespaces) == 0 && len(held) == 0 {
		return []*unit{main}
	}
	out := []*unit{main}
	for _, s := range spec.Namespaces {
		u := &unit{teamspace: teamspace, namespace: entryNamespace(teamspace, s), entry: s.Name, spec: spec, adopted: s.Adopt != "", enforce: s.Enforce}
		u.spec.Pods, u.spec.CPU = s.Pods, s.CPU
		out = append(out, u)
	}
	if len(spec.Namespaces) > 0 {
		extras := out[1:]
		main.spec.Pods = rest(spec.Pods, extras, func(u *unit) string { return u.spec.Pods })
		main.spec.CPU = rest(spec.CPU, extras, func(u *unit) string { return u.spec.CPU })
		divide(out, spec.Memory, func(i int) string { return spec.Namespaces[i].Memory }, func(u *unit, v string) { u.spec.Memory = v })
		divide(out, spec.EphemeralStorage, func(i int) string { return spec.Namespaces[i].EphemeralStorage }, func(u *unit, v string) { u.spec.EphemeralStorage = v })
		divideObjects(out, spec)
	}
	reserve(main, held)
	for _, u := range out {
		u.spec.DefaultRequestCPU, u.spec.DefaultRequestMemory, u.spec.DefaultEphemeralStorage = unitDefaults(u.spec, spec)
	}
	return out
}

// rest is total less the entries' shares, canonical.
func rest(total string, extras []*unit, get func(*unit) string) string {
	q := resource.MustParse(total)
	for _, u := range extras {
		q.Sub(resource.MustParse(get(u)))
	}
	return canonical(q)
}

// divide sets one quantity of every unit from the total ("" unset: none
// gets any): a named share as named; the rest equally among team-<name>
// (all[0]) and the entries naming none, in whole units of the total's
// smallest step (bytes), team-<name> taking the remainder.
func divide(all []*unit, total string, named func(entry int) string, set func(*unit, string)) {
	if total == "" {
		return
	}
	left := resource.MustParse(total)
	var unnamed []*unit
	for i, u := range all[1:] {
		if v := named(i); v != "" {
			set(u, v)
			left.Sub(resource.MustParse(v))
			continue
		}
		unnamed = append(unnamed, u)
	}
	part := resource.NewQuantity(left.Value()/int64(len(unnamed)+1), left.Format)
	for _, u := range unnamed {
		set(u, canonical(*part))
		left.Sub(*part)
	}
	set(all[0], canonical(left))
}

// divideObjects sets every unit's object counts (see units).
func divideObjects(all []*unit, spec Spec) {
	if len(spec.Objects) == 0 {
		return
	}
	for _, u := range all {
		u.spec.Objects = map[corev1.ResourceName]int64{}
	}
	for _, c := range objectCounts {
		total, ok := spec.Objects[c.name]
		if !ok {
			continue
		}
		if c.whole {
			for _, u := range all {
				u.spec.Objects[c.name] = total
			}
			continue
		}
		free := total - c.min
		var unnamed []*unit
		for i, u := range all[1:] {
			if n, named := spec.Namespaces[i].Objects[c.name]; named {
				u.spec.Objects[c.name] = n + c.min
				free -= n
				continue
			}
			unnamed = append(unnamed, u)
		}
		part := free / int64(len(unnamed)+1)
		for _, u := range unnamed {
			u.spec.Objects[c.name] = part + c.min
			free -= part
		}
		all[0].spec.Objects[c.name] = free + c.min
	}
}

// unitDefaults are a unit's container defaults (the LimitRange): the
// spec's spec.defaults where it fits in the unit's share (a default
// request above the namespace's whole quota could never be admitted),
// else the unit's total / its pods, as for a TeamSpace without
// spec.defaults.
func unitDefaults(u, team Spec) (cpu, memory, ephemeral string) {
	pods, _ := strconv.ParseInt(u.Pods, 10, 64)
	pods = max(pods, 1) // a namespace reserve left without pods
	cpu = share(resource.MustParse(u.CPU), pods, true)
	if fits(team.cpuDefault, u.CPU) {
		cpu = team.cpuDefault
	}
	if u.Memory != "" {
		memory = share(resource.MustParse(u.Memory), pods, false)
		if fits(team.memoryDefault, u.Memory) {
			memory = team.memoryDefault
		}
	}
	if u.EphemeralStorage != "" {
		ephemeral = share(resource.MustParse(u.EphemeralStorage), pods, false)
	}
	return cpu, memory, ephemeral
}

// fits reports whether a default ("" none) is at most the unit's total.
func fits(def, total string) bool {
	if def == "" {
		return false
	}
	d, t := resource.MustParse(def), resource.MustParse(total)
	return d.Cmp(t) <= 0
}

// canonical is q as the API server stores it (see share).
func canonical(q resource.Quantity) string {
	s := q.String()
	if c, err := CanonicalQuantity(s); err == nil {
		return c
	}
	return s
}

// otherTeamNamespaces are the unit's team's namespaces but its own,
// sorted: team-isolation admits them (nil without entries).
func (u *unit) otherTeamNamespaces() []string {
	if len(u.spec.Namespaces) == 0 {
		return nil
	}
	var out []string
	for _, n := range teamNamespaces(u.teamspace, u.spec) {
		if n != u.namespace {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// reserve takes from team-<name> (main) what the quotas of the kept
// namespaces hold as last applied (held, one list each: namespaces no
// entry asks for any more, sync.go keepUnasked), so that the team's quotas
// never add up to more than its totals: a removed entry's share comes
// back to team-<name> only once its namespace is gone. Nothing goes below
// zero (an object count below the namespace's own).
func reserve(main *unit, held []corev1.ResourceList) {
	if len(held) == 0 {
		return
	}
	less := func(v, by string) string {
		q := resource.MustParse(v)
		q.Sub(resource.MustParse(by))
		if q.Sign() < 0 {
			return "0"
		}
		return canonical(q)
	}
	objects := maps.Clone(main.spec.Objects)
	for _, hard := range held {
		for k, v := range hard {
			s := &main.spec
			switch k {
			case corev1.ResourcePods:
				s.Pods = less(s.Pods, v.String())
			case corev1.ResourceRequestsCPU:
				s.CPU = less(s.CPU, v.String())
			case corev1.ResourceRequestsMemory:
				if s.Memory != "" {
					s.Memory = less(s.Memory, v.String())
				}
			case resourceRequestsEphemeral:
				if s.EphemeralStorage != "" {
					s.EphemeralStorage = less(s.EphemeralStorage, v.String())
				}
			default:
				i := slices.IndexFunc(objectCounts, func(c objectCount) bool { return c.name == k })
				if n, ok := objects[k]; ok && i >= 0 && !objectCounts[i].whole {
					own := objectCounts[i].min
					objects[k] = max(n-(v.Value()-own), own)
				}
			}
		}
	}
	main.spec.Objects = objects
}

// keptHard is what a unit's two quotas hold as last applied (their keys
// do not overlap): a kept or removed namespace's share.
func (o *observation) keptHard(u *unit) corev1.ResourceList {
	hard := corev1.ResourceList{}
	for _, t := range quotaTypes {
		if q := o.child(t, u); q != nil {
			maps.Copy(hard, t.kept(u, q).(*corev1.ResourceQuota).Spec.Hard)
		}
	}
	return hard
}
