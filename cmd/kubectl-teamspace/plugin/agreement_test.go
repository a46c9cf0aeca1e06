package plugin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/labhub/teamspace/hook/allowance"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// TestAllowanceAgreesWithHook: the room `kubectl teamspace allowance`
// shows is the room the hook grants. For each set of alice's older
// TeamSpaces, a new TeamSpace asking for exactly the pods left is synced
// within the allowance by the hook, and one asking for one pod more is
// not; when no TeamSpace is left, not even one pod is granted.
func TestAllowanceAgreesWithHook(t *testing.T) {
	limits := map[string]string{v1alpha1.KeyMaxTeamSpaces: "4", v1alpha1.KeyMaxPods: "10"}
	type ts = map[string]any
	older := func(name string, minute, pods int, opts ...func(ts)) ts {
		o := ts{"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.Kind,
			"metadata": ts{"name": name, "uid": "uid-" + name, "creationTimestamp": fmt.Sprintf("2026-01-01T00:%02d:00Z", minute),
				"labels":      ts{v1alpha1.RequesterLabel: "alice"},
				"annotations": ts{v1alpha1.RequestedByAnnotation: "alice"}},
			"spec": ts{"pods": pods, "cpu": "100m"}}
		for _, f := range opts {
			f(o)
		}
		return o
	}
	meta := func(o ts) ts { return o["metadata"].(ts) }
	deleting := func(o ts) { meta(o)["deletionTimestamp"] = "2026-01-02T00:00:00Z" }
	unlabelled := func(o ts) { delete(meta(o)["labels"].(ts), v1alpha1.RequesterLabel) }
	byOther := func(o ts) { meta(o)["annotations"].(ts)[v1alpha1.RequestedByAnnotation] = "alice@example" }
	for _, c := range []struct {
		name  string
		older []ts
	}{
		{"none", nil},
		{"two older ones", []ts{older("a", 1, 2), older("b", 2, 3)}},
		{"a TeamSpace being deleted counts until it is gone", []ts{older("going", 1, 4, deleting)}},
		{"one without the requester label (exempt) does not count", []ts{older("exempt", 1, 4, unlabelled)}},
		{"another requester of the same label does not count", []ts{older("hers", 1, 4, byOther)}},
		{"one that does not fit is skipped, not counted", []ts{older("a", 1, 3), older("big", 2, 9)}},
		{"one with an invalid spec does not count", []ts{older("bad", 1, 0)}},
		{"no TeamSpace left", []ts{older("a", 1, 1), older("b", 2, 1), older("c", 3, 1), older("d", 4, 1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			items := make([]unstructured.Unstructured, len(c.older))
			for i, o := range c.older {
				items[i] = unstructured.Unstructured{Object: o}
			}
			a, err := allowance.Parse(limits)
			if err != nil {
				t.Fatal(err)
			}
			room := left(&Totals{TeamSpaces: limits[v1alpha1.KeyMaxTeamSpaces], Pods: limits[v1alpha1.KeyMaxPods]}, held(items, "alice", a))
			pods, _ := strconv.Atoi(room.Pods)
			if room.TeamSpaces == "0" || pods == 0 {
				if got := syncNew(t, limits, c.older, 1); got == "" {
					t.Errorf("the plugin shows no room (TeamSpaces %s, pods %s left); the hook grants a TeamSpace of 1 pod", room.TeamSpaces, room.Pods)
				}
				return
			}
			if got := syncNew(t, limits, c.older, pods); got != "" {
				t.Errorf("the plugin shows %d pods left; the hook refuses a TeamSpace of %d: %s", pods, pods, got)
			}
			if got := syncNew(t, limits, c.older, pods+1); got == "" {
				t.Errorf("the plugin shows %d pods left; the hook grants a TeamSpace of %d", pods, pods+1)
			}
		})
	}
}

// syncNew syncs alice's newest TeamSpace asking for pods beside older (all
// shown as related, with the limits ConfigMap) and returns the hook's
// message when it is beyond the allowance, "" when it is within.
func syncNew(t *testing.T, limits map[string]string, older []map[string]any, pods int) string {
	t.Helper()
	parent := map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.Kind,
		"metadata": map[string]any{"name": "newest", "uid": "uid-newest", "creationTimestamp": "2026-01-01T01:00:00Z",
			"labels":      map[string]any{v1alpha1.RequesterLabel: "alice"},
			"annotations": map[string]any{v1alpha1.RequestedByAnnotation: "alice"}},
		"spec": map[string]any{"pods": pods, "cpu": "100m"}}
	siblings := map[string]any{"newest": parent}
	for _, o := range older {
		siblings[o["metadata"].(map[string]any)["name"].(string)] = o
	}
	body, err := json.Marshal(map[string]any{"parent": parent, "children": map[string]any{}, "related": map[string]any{
		"ConfigMap.v1": map[string]any{v1alpha1.SystemNamespace + "/" + v1alpha1.LimitsName: map[string]any{
			"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": v1alpha1.LimitsName, "namespace": v1alpha1.SystemNamespace},
			"data": limits}},
		v1alpha1.Kind + "." + v1alpha1.APIVersion: siblings,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var r teamspace.Request
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	for _, c := range teamspace.Sync(&r).Status.Conditions {
		if c.Type == "Ready" && c.Reason == v1alpha1.ReasonAllowanceExceeded {
			return c.Message
		}
	}
	return ""
}
