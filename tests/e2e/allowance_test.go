package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
)

// stepRequesterAllowance (issue #40, item 5): one requester's total across
// TeamSpaces, on the real engine. Before, the limits held per TeamSpace
// only, so rhea (bound to teamspace-requester) could hold as many
// TeamSpaces at the limits as she liked. With an allowance of 2 TeamSpaces
// and 5 pods in the limits ConfigMap:
//
//   - her third TeamSpace says RequesterAllowanceExceeded and gets no
//     namespace; raising the allowance gives it one;
//   - resizing her oldest (as the platform) pushes the next one beyond the
//     pods total: it keeps its namespace and quota as they are and says
//     why, and the newer one that still fits stays Ready;
//   - deleting the oldest brings the other back within it.
func stepRequesterAllowance(t *testing.T, w *walk) {
	const rhea = "rhea@example.com"
	cms := w.kube.CoreV1().ConfigMaps("teamspace-system")
	limits, err := cms.Get(w.ctx, "teamspace-limits", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	setAllowance := func(data map[string]string) {
		t.Helper()
		patch, _ := json.Marshal(map[string]any{"data": data})
		if _, err := cms.Patch(w.ctx, "teamspace-limits", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		restore := map[string]string{}
		for _, k := range []string{"maxTeamSpacesPerRequester", "maxPodsPerRequester", "maxCPUPerRequester", "maxMemoryPerRequester"} {
			restore[k] = limits.Data[k]
		}
		setAllowance(restore)
	})
	setAllowance(map[string]string{"maxTeamSpacesPerRequester": "2", "maxPodsPerRequester": "5", "maxCPUPerRequester": "", "maxMemoryPerRequester": ""})

	w.bindRequester(t, rhea, "walkthrough-rhea-requester")
	rheaTS := dynamic.NewForConfigOrDie(w.as(rhea)).Resource(teamSpaces)
	create := func(name string, pods int64) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"pods": pods, "memory": "1Gi"},
		}}
		ts, err := rheaTS.Create(w.ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("rhea's TeamSpace %s: %v", name, err)
		}
		if got := ts.GetLabels()["platform.labhub.io/requester"]; got != "rhea.example.com" {
			t.Fatalf("%s's requester label = %q, want rhea.example.com (set by the API server)", name, got)
		}
		t.Cleanup(func() {
			_ = w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{})
			w.poll(t, name+" gone", func() bool { return w.gone(name) })
		})
		// Creation times are whole seconds: a second apart, the order is theirs.
		time.Sleep(1100 * time.Millisecond)
	}
	says := func(name, reason string) string {
		t.Helper()
		var got, msg string
		w.poll(t, name+" says "+reason, func() bool {
			got, msg = w.readyReason(name)
			return w.observedCurrent(name) && got == reason
		})
		return msg
	}
	evidence := map[string]any{}

	create("rhea-1", 2)
	create("rhea-2", 2)
	create("rhea-3", 1)
	ready := says("rhea-1", "Ready")
	says("rhea-2", "Ready")
	// A requester's TeamSpace has the platform's defaults (issue #41, item
	// 3): the engine makes team-objects beside team-quota.
	q, err := w.kube.CoreV1().ResourceQuotas("team-rhea-1").Get(w.ctx, "team-objects", metav1.GetOptions{})
	if err != nil {
		t.Errorf("team-rhea-1/team-objects: %v", err)
	} else if secrets, storage := q.Spec.Hard["secrets"], q.Spec.Hard["requests.ephemeral-storage"]; secrets.String() != "50" || storage.String() != "4Gi" {
		t.Errorf("team-rhea-1/team-objects hard = %v, want the shipped defaults (secrets 50, requests.ephemeral-storage 4Gi)", q.Spec.Hard)
	}
	if !strings.Contains(ready, "secrets=50") || !strings.Contains(ready, "ephemeral-storage=2Gi (also its default limit)") {
		t.Errorf("rhea-1's Ready message %q: want team-objects' counts and the ephemeral default (4Gi / 2 pods)", ready)
	}
	msg := says("rhea-3", "RequesterAllowanceExceeded")
	if !strings.Contains(msg, "TeamSpaces 3 > 2 (key maxTeamSpacesPerRequester)") || !strings.Contains(msg, "TeamSpaces 2, pods 4") {
		t.Errorf("rhea-3's message %q: want the totals and the key", msg)
	}
	if _, ok := w.namespace("team-rhea-3"); ok {
		t.Error("namespace team-rhea-3 exists beyond rhea's allowance")
	}
	evidence["third_beyond_two"] = msg

	raised := time.Now()
	setAllowance(map[string]string{"maxTeamSpacesPerRequester": "3"})
	says("rhea-3", "Ready")
	evidence["raised_to_ready_seconds"] = time.Since(raised).Seconds()
	if _, ok := w.namespace("team-rhea-3"); !ok {
		t.Error("no namespace team-rhea-3 once the allowance is raised")
	}

	// The platform (exempt) resizes the oldest: 4 + 2 > 5, rhea-2 no
	// longer fits; 4 + 1 does, rhea-3 stays.
	w.patchTeamSpace(t, "rhea-1", `{"spec":{"pods":4}}`)
	msg = says("rhea-2", "RequesterAllowanceExceeded")
	if !strings.Contains(msg, "pods 6 > 5 (key maxPodsPerRequester)") || !strings.Contains(msg, "keeping what it has as it is") {
		t.Errorf("rhea-2's message %q: want the pods total and what it keeps", msg)
	}
	if got := w.quotaPods("team-rhea-2"); got != "2" {
		t.Errorf("team-rhea-2's quota pods = %q beyond the allowance, want 2 kept as it was", got)
	}
	says("rhea-3", "Ready")
	evidence["resized_oldest_pushes_next_beyond"] = msg

	if err := w.dyn.Resource(teamSpaces).Delete(w.ctx, "rhea-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	says("rhea-2", "Ready")
	evidence["oldest_deleted_to_ready_seconds"] = time.Since(deleted).Seconds()
	evidence["measured"] = "TeamSpaces created through a client impersonating rhea@example.com (bound only to teamspace-requester); the allowance set and raised in ConfigMap teamspace-system/teamspace-limits and rhea-1 resized by the admin; times from the write to the Ready condition read back"
	w.evidence(t, "allowance.json", evidence)
}
