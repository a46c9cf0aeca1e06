package robust

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func finalTeamSpace(name, uid string, entries ...any) *unstructured.Unstructured {
	ts := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"pods": int64(4)}}}
	ts.SetName(name)
	ts.SetUID(types.UID(uid))
	if entries != nil {
		ts.Object["spec"].(map[string]any)["namespaces"] = entries
	}
	return ts
}

// goodFinal: TeamSpace a with team-a and extra entry dev, b adopting
// legacy; each namespace with its quota, each object in its team's
// namespace.
func goodFinal() *Final {
	return &Final{
		TeamSpaces: []*unstructured.Unstructured{
			finalTeamSpace("a", "ua", map[string]any{"name": "dev", "pods": int64(1), "cpu": "100m"}),
			finalTeamSpace("b", "ub", map[string]any{"name": "legacy", "pods": int64(1), "cpu": "100m", "adopt": map[string]any{"namespace": "legacy"}}),
		},
		Namespaces: map[string]string{"team-a": "ua", "team-a--dev": "ua", "team-b": "ub", "legacy": "", "default": ""},
		Quotas:     map[string]bool{"team-a": true, "team-a--dev": true, "team-b": true, "legacy": true},
		Labelled: map[string]string{"ResourceQuota team-a/team-quota": "a", "RoleBinding team-a--dev/team-owners": "a",
			"ResourceQuota legacy/team-quota": "b", "LimitRange team-b/team-limits": "b"},
		QuotaOwners: map[string]string{"team-a/team-quota": "lra", "legacy/team-quota": "lrl"},
		Hard:        map[string]map[string]int64{"team-a": {"pods": 3}, "team-a--dev": {"pods": 1}, "team-b": {"pods": 3}, "legacy": {"pods": 1}},
		LimitRanges: map[string]string{"team-a": "lra", "legacy": "lrl"},
	}
}

func TestGoodFinal(t *testing.T) {
	if v := CheckFinal(goodFinal()); len(v) > 0 {
		t.Fatalf("violations of a good final state: %v", v)
	}
}

// TestEachFinalInvariantFails breaks, once each, what a rule of the final
// state guards, and wants that rule alone to say so, naming the objects.
func TestEachFinalInvariantFails(t *testing.T) {
	for _, c := range []struct {
		name, invariant, object string
		breakIt                 func(*Final)
	}{
		{"namespace missing", "children-as-spec", "Namespace team-a--dev", func(f *Final) { delete(f.Namespaces, "team-a--dev"); delete(f.Quotas, "team-a--dev") }},
		{"quota missing", "children-as-spec", "Namespace team-b", func(f *Final) { delete(f.Quotas, "team-b") }},
		{"adopted without its quota", "children-as-spec", "Namespace legacy", func(f *Final) { delete(f.Quotas, "legacy") }},
		{"a namespace asked for by none", "children-as-spec", "Namespace team-a--old", func(f *Final) { f.Namespaces["team-a--old"] = "ua" }},
		{"a namespace of a TeamSpace gone", "children-as-spec", "Namespace team-c", func(f *Final) { f.Namespaces["team-c"] = "uc" }},
		{"another's namespace", "children-as-spec", "Namespace team-a--dev", func(f *Final) { f.Namespaces["team-a--dev"] = "ub" }},
		{"a quota its LimitRange does not control", "quotas-of-their-limitrange", "ResourceQuota team-a/team-quota", func(f *Final) { f.LimitRanges["team-a"] = "lra2" }},
		{"a's quotas over its pods", "quotas-within-totals-at-rest", "TeamSpace a ua", func(f *Final) { f.Hard["team-a--dev"]["pods"] = 2 }},
		{"b's object in a's namespace", "nothing-in-another-team", "RoleBinding team-a/team-owners", func(f *Final) { f.Labelled["RoleBinding team-a/team-owners"] = "b" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := goodFinal()
			c.breakIt(f)
			v := CheckFinal(f)
			if len(v) == 0 {
				t.Fatal("no violation")
			}
			for _, x := range v {
				if x.Invariant != c.invariant {
					t.Errorf("violation of %s, want %s alone: %v", x.Invariant, c.invariant, x)
				}
			}
			if !strings.Contains(strings.Join(v[0].Objects, " "), c.object) {
				t.Errorf("violation names %v, want %s", v[0].Objects, c.object)
			}
		})
	}
}

func TestLongestNotReady(t *testing.T) {
	h := &History{}
	for _, e := range []Event{
		{At: at(0), Kind: ReadySample, TeamSpace: "a", UID: "ua", Present: false}, // not Ready yet: being made
		{At: at(1), Kind: ReadySample, TeamSpace: "a", UID: "ua", Present: true},
		{At: at(2), Kind: ReadySample, TeamSpace: "a", UID: "ua", Present: false},
		{At: at(5), Kind: ReadySample, TeamSpace: "a", UID: "ua", Present: true},
		{At: at(1), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: true},
		{At: at(3), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: false}, // then deleted: to its last sample
		{At: at(4), Kind: ReadySample, TeamSpace: "b", UID: "ub", Present: false},
		{At: at(9), Kind: ReadySample, TeamSpace: "c", UID: "uc", Present: true},
	} {
		h.Add(e)
	}
	if d, who := LongestNotReady(h); d.Seconds() != 3 || who != "a" {
		t.Errorf("LongestNotReady = %s %s, want 3s a", d, who)
	}
}
