package teamspace

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// unitPart is one unit's part as a test reads it: its namespace and its
// spec's totals and defaults.
type unitPart struct {
	Namespace               string
	Pods, CPU, Memory, Eph  string
	DefCPU, DefMem, DefEph  string
	Objects                 map[corev1.ResourceName]int64
	NetworkPolicyFromOthers []string
}

func partsOf(us []*unit) []unitPart {
	var out []unitPart
	for _, u := range us {
		out = append(out, unitPart{
			Namespace: u.namespace, Pods: u.spec.Pods, CPU: u.spec.CPU, Memory: u.spec.Memory, Eph: u.spec.EphemeralStorage,
			DefCPU: u.spec.DefaultRequestCPU, DefMem: u.spec.DefaultRequestMemory, DefEph: u.spec.DefaultEphemeralStorage,
			Objects: u.spec.Objects, NetworkPolicyFromOthers: u.otherTeamNamespaces(),
		})
	}
	return out
}

func TestUnits(t *testing.T) {
	cases := []struct {
		name string
		spec string
		want []unitPart
	}{
		{
			name: "without entries: team-<name> with the spec as it is",
			spec: `{"pods":4,"cpu":"2","memory":"1Gi","defaults":{"cpu":"100m"}}`,
			want: []unitPart{{Namespace: "team-a", Pods: "4", CPU: "2", Memory: "1Gi", DefCPU: "100m", DefMem: "256Mi"}},
		},
		{
			name: "pods and cpu: team-<name> keeps the rest",
			spec: `{"pods":5,"cpu":"2","namespaces":[{"name":"dev","pods":1,"cpu":"250m"},{"name":"prod","pods":2,"cpu":"1"}]}`,
			want: []unitPart{
				{Namespace: "team-a", Pods: "2", CPU: "750m", DefCPU: "375m", NetworkPolicyFromOthers: []string{"team-a--dev", "team-a--prod"}},
				{Namespace: "team-a--dev", Pods: "1", CPU: "250m", DefCPU: "250m", NetworkPolicyFromOthers: []string{"team-a", "team-a--prod"}},
				{Namespace: "team-a--prod", Pods: "2", CPU: "1", DefCPU: "500m", NetworkPolicyFromOthers: []string{"team-a", "team-a--dev"}},
			},
		},
		{
			name: "memory and ephemeral storage unnamed: equal parts of the rest, team-<name> takes the remainder",
			spec: `{"pods":4,"memory":"1000","ephemeralStorage":"3Gi","namespaces":[{"name":"x","pods":1,"cpu":"100m","memory":"100"},{"name":"y","pods":1,"cpu":"100m"}]}`,
			want: []unitPart{
				{Namespace: "team-a", Pods: "2", CPU: "800m", Memory: "450", Eph: "1Gi", DefCPU: "400m", DefMem: "225", DefEph: "512Mi", NetworkPolicyFromOthers: []string{"team-a--x", "team-a--y"}},
				{Namespace: "team-a--x", Pods: "1", CPU: "100m", Memory: "100", Eph: "1Gi", DefCPU: "100m", DefMem: "100", DefEph: "1Gi", NetworkPolicyFromOthers: []string{"team-a", "team-a--y"}},
				{Namespace: "team-a--y", Pods: "1", CPU: "100m", Memory: "450", Eph: "1Gi", DefCPU: "100m", DefMem: "450", DefEph: "1Gi", NetworkPolicyFromOthers: []string{"team-a", "team-a--x"}},
			},
		},
		{
			name: "objects: an extra namespace's own ConfigMap on top of its share, resourcequotas whole in each",
			spec: `{"pods":4,"objects":{"configmaps":10,"resourcequotas":3,"secrets":7},"namespaces":[{"name":"x","pods":1,"cpu":"100m","objects":{"secrets":5}},{"name":"y","pods":1,"cpu":"100m"}]}`,
			want: []unitPart{
				{Namespace: "team-a", Pods: "2", CPU: "800m", DefCPU: "400m", NetworkPolicyFromOthers: []string{"team-a--x", "team-a--y"},
					Objects: map[corev1.ResourceName]int64{"configmaps": 4, "resourcequotas": 3, "secrets": 1}},
				{Namespace: "team-a--x", Pods: "1", CPU: "100m", DefCPU: "100m", NetworkPolicyFromOthers: []string{"team-a", "team-a--y"},
					Objects: map[corev1.ResourceName]int64{"configmaps": 4, "resourcequotas": 3, "secrets": 5}},
				{Namespace: "team-a--y", Pods: "1", CPU: "100m", DefCPU: "100m", NetworkPolicyFromOthers: []string{"team-a", "team-a--x"},
					Objects: map[corev1.ResourceName]int64{"configmaps": 4, "resourcequotas": 3, "secrets": 1}},
			},
		},
		{
			name: "spec.defaults where they fit the share, else share / pods",
			spec: `{"pods":4,"cpu":"1","memory":"1Gi","defaults":{"cpu":"200m","memory":"512Mi"},"namespaces":[{"name":"small","pods":2,"cpu":"100m","memory":"256Mi"}]}`,
			want: []unitPart{
				{Namespace: "team-a", Pods: "2", CPU: "900m", Memory: "768Mi", DefCPU: "200m", DefMem: "512Mi", NetworkPolicyFromOthers: []string{"team-a--small"}},
				{Namespace: "team-a--small", Pods: "2", CPU: "100m", Memory: "256Mi", DefCPU: "50m", DefMem: "128Mi", NetworkPolicyFromOthers: []string{"team-a"}},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(json.RawMessage(c.spec))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, partsOf(units("a", spec, nil))); diff != "" {
				t.Errorf("units (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnitsAddUpToTheTotals: for any valid division, the namespaces'
// quotas add up to the totals exactly (the object counts: plus each extra
// namespace's own), so that no namespace can take what the team does not
// have.
func TestUnitsAddUpToTheTotals(t *testing.T) {
	for i := range 200 {
		n := i%4 + 1
		raw := map[string]any{"pods": 50, "cpu": "7", "memory": "10Gi", "ephemeralStorage": "100G",
			"objects": map[string]int{"configmaps": 40, "resourcequotas": 30, "secrets": 33}}
		var entries []map[string]any
		for j := range n {
			e := map[string]any{"name": fmt.Sprintf("e%d", j), "pods": 1 + (i+j)%9, "cpu": fmt.Sprintf("%dm", 1+(i*7+j*13)%1500)}
			if (i+j)%2 == 0 {
				e["memory"] = fmt.Sprintf("%dMi", 1+(i*31+j)%2000)
			}
			if (i+j)%3 == 0 {
				e["ephemeralStorage"] = fmt.Sprintf("%d", 1+(i*977+j)%20000000000)
				e["objects"] = map[string]int{"secrets": (i + j) % 7, "configmaps": (i * j) % 8}
			}
			entries = append(entries, e)
		}
		raw["namespaces"] = entries
		b, _ := json.Marshal(raw)
		spec, err := ParseSpec(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		us := units("a", spec, nil)
		sum := map[string]*resource.Quantity{}
		add := func(k, v string) {
			q := resource.MustParse(v)
			if sum[k] == nil {
				sum[k] = &resource.Quantity{}
			}
			sum[k].Add(q)
		}
		counts := map[corev1.ResourceName]int64{}
		for j, u := range us {
			add("pods", u.spec.Pods)
			add("cpu", u.spec.CPU)
			add("memory", u.spec.Memory)
			add("ephemeralStorage", u.spec.EphemeralStorage)
			for _, k := range slices.Sorted(maps.Keys(u.spec.Objects)) {
				counts[k] += u.spec.Objects[k]
				i := slices.IndexFunc(objectCounts, func(c objectCount) bool { return c.name == k })
				switch {
				case objectCounts[i].whole:
					// Every namespace holds it whole.
					if u.spec.Objects[k] != spec.Objects[k] {
						t.Errorf("%s: %s holds %s %d, want the whole %d", b, u.namespace, k, u.spec.Objects[k], spec.Objects[k])
					}
					counts[k] -= u.spec.Objects[k]
					if j == 0 {
						counts[k] += spec.Objects[k]
					}
				case j > 0:
					counts[k] -= objectCounts[i].min
				}
			}
			for _, v := range []string{u.spec.Pods, u.spec.CPU, u.spec.Memory, u.spec.EphemeralStorage} {
				if q := resource.MustParse(v); q.Sign() <= 0 {
					t.Errorf("%s: %s gets %s", b, u.namespace, v)
				}
			}
		}
		for k, total := range map[string]string{"pods": spec.Pods, "cpu": spec.CPU, "memory": spec.Memory, "ephemeralStorage": spec.EphemeralStorage} {
			if sum[k].Cmp(resource.MustParse(total)) != 0 {
				t.Errorf("%s: the namespaces' %s add up to %s, want %s", b, k, sum[k], total)
			}
		}
		if diff := cmp.Diff(spec.Objects, counts); diff != "" {
			t.Errorf("%s: object counts less the extra namespaces' own (-total +sum):\n%s", b, diff)
		}
	}
}
