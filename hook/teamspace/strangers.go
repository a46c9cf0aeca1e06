package teamspace

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
)

// Strangers are what someone added inside a field the hook owns that the
// engine's 3-way merge would keep for ever: a map key, or an item of a list
// whose items all carry a "name" (the engine merges such a list as a map
// keyed by it), that the live child has and neither the engine's
// last-applied copy nor the desired child has. The merge removes only what
// its last-applied copy holds, so a podSelector label added to
// team-isolation, or a subject added to a binding, would stay and the
// child would select none of the team's pods or bind a stranger.
//
// They are removed in two passes: while there are strangers the answer is
// the desired child with the strangers added (the engine records them in
// its last-applied copy, a write that changes nothing live), and once that
// copy holds them they are strangers no more, the answer is the desired
// child and the merge deletes them. Lists without such a key are replaced
// whole by the engine and need nothing.
//
// This mirrors Metacontroller v4.17.2's merge (pkg/dynamic/apply/apply.go:
// mergeObject, mergeArray, detectListMapKey); of its known merge keys only
// "name" occurs in the fields the hook owns.

// strangerKey is the one list-map key of the engine's that the hook's
// children have (RoleBinding and ClusterRoleBinding subjects).
const strangerKey = "name"

// withStrangers returns desired (JSON values) with the strangers of live
// added, and their paths (sorted); desired itself is not changed. Nothing
// is added where there are none.
func withStrangers(desired, live, last any) (any, []string) {
	var paths []string
	out := addStrangers("", desired, live, last, &paths)
	sort.Strings(paths)
	return out, paths
}

func addStrangers(path string, desired, live, last any, paths *[]string) any {
	switch d := desired.(type) {
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return desired
		}
		la, _ := last.(map[string]any)
		out := make(map[string]any, len(d))
		for k, v := range d {
			out[k] = addStrangers(path+"."+k, v, l[k], la[k], paths)
		}
		for k, v := range l {
			if _, wanted := d[k]; wanted {
				continue
			}
			if _, recorded := la[k]; recorded {
				continue
			}
			out[k] = v
			*paths = append(*paths, path+"."+k)
		}
		return out
	case []any:
		l, ok := live.([]any)
		la, _ := last.([]any)
		if !ok || !listMap(d, l, la) {
			return desired
		}
		dm, lm, lam := byName(d), byName(l), byName(la)
		out := make([]any, 0, len(d))
		for _, item := range d {
			n := itemName(item)
			out = append(out, addStrangers(fmt.Sprintf("%s[%s]", path, n), item, lm[n], lam[n], paths))
		}
		for _, item := range l {
			n := itemName(item)
			if _, wanted := dm[n]; wanted {
				continue
			}
			if _, recorded := lam[n]; recorded {
				continue
			}
			out = append(out, item)
			*paths = append(*paths, fmt.Sprintf("%s[%s]", path, n))
		}
		return out
	}
	return desired
}

// listMap reports whether the engine merges these lists as a map keyed by
// strangerKey: every item of all three is an object that has it.
func listMap(lists ...[]any) bool {
	seen := false
	for _, list := range lists {
		for _, item := range list {
			m, ok := item.(map[string]any)
			if !ok {
				return false
			}
			if _, ok := m[strangerKey]; !ok {
				return false
			}
			seen = true
		}
	}
	return seen
}

func itemName(item any) string {
	return fmt.Sprint(item.(map[string]any)[strangerKey])
}

func byName(list []any) map[string]any {
	m := make(map[string]any, len(list))
	for _, item := range list {
		m[itemName(item)] = item
	}
	return m
}

// toJSON turns a typed child into JSON values (maps, lists, scalars) with
// the converter answer uses.
func toJSON(obj object) any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil
	}
	return m
}

// strangersOf returns the answer for a wanted child with the strangers of
// its observed one added (see above), and their paths; answer unchanged
// and no paths when there are none. Only the fields the type owns are
// looked at (content).
func (t *childType) strangersOf(answer map[string]any, desired object, o *Object) (map[string]any, []string) {
	if o == nil {
		return answer, nil
	}
	observed, err := t.decode(o)
	if err != nil {
		return answer, nil
	}
	want := t.content(desired)
	// As wanted, it has nothing the spec does not set (the steady state:
	// no conversions on the hot path).
	if equality.Semantic.DeepEqual(want, t.content(observed)) {
		return answer, nil
	}
	var last any = map[string]any{}
	if applied := t.lastApplied(o); applied != nil {
		last = toJSON(t.content(applied))
	}
	got, paths := withStrangers(toJSON(want), toJSON(t.content(observed)), last)
	if len(paths) == 0 {
		return answer, nil
	}
	out := make(map[string]any, len(answer))
	for k, v := range answer {
		out[k] = v
	}
	for k, v := range got.(map[string]any) {
		if k != "metadata" {
			out[k] = v
		}
	}
	return out, paths
}
