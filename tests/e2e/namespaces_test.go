package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// stepTeamNamespaces (issue #52): one TeamSpace, several namespaces, one
// budget, on the real engine. TeamSpace eta has totals of 4 pods, 1 cpu
// and 1Gi, an owner, and entries dev (1 pod, 250m) and prod (2 pods,
// 500m, 512Mi):
//
//   - three namespaces, each with its quota's share (team-eta keeps the
//     rest: 1 pod, 250m, and half of the memory prod leaves, as dev
//     names none), its owners' binding and team-isolation admitting the
//     other two; kubectl get shows the team's use against its totals;
//   - the owner runs a pod in dev and the second is refused by dev's quota:
//     each namespace is held to its share by the API server itself;
//   - a share deleted by hand comes back; a share moved changes both
//     quotas;
//   - an entry whose namespace someone else holds says so, the others are
//     made, nothing of the team's goes in it; once it is gone the entry
//     gets its namespace;
//   - an entry removed keeps its namespace and everything in it, its share
//     held back from team-eta: the four quotas add up to the totals; once
//     the owner confirms the removal, the namespace is archived and goes;
//   - the owner moves shares and confirms removals (impersonated);
//   - deleting the TeamSpace archives all its namespaces in its record.
func stepTeamNamespaces(t *testing.T, w *walk) {
	const name = "eta"
	entries := func(list ...string) string { return `{"spec":{"namespaces":[` + strings.Join(list, ",") + `]}}` }
	dev := `{"name":"dev","pods":1,"cpu":"250m"}`
	prod := `{"name":"prod","pods":2,"cpu":"500m","memory":"512Mi"}`
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"pods": 4, "cpu": "1", "memory": "1Gi", "owners": []any{map[string]any{"kind": "User", "name": "ann"}}},
	}}
	ts, err := w.dyn.Resource(teamSpaces).Create(w.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating TeamSpace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{})
		w.poll(t, name+" gone", func() bool { return w.gone(name) })
	})
	start := time.Now()
	w.patchTeamSpace(t, name, entries(dev, prod))
	w.poll(t, name+" Ready with dev and prod", func() bool { return w.observedCurrent(name) && w.ready(name) })
	readyIn := time.Since(start)

	type share struct{ pods, cpu, memory string }
	hard := func(ns string) share {
		q, ok := w.quota(ns)
		if !ok {
			return share{}
		}
		return share{hardPods(q.Spec.Hard), q.Spec.Hard.Name(corev1.ResourceRequestsCPU, "").String(), q.Spec.Hard.Name(corev1.ResourceRequestsMemory, "").String()}
	}
	wantShares := map[string]share{
		"team-eta":       {"1", "250m", "256Mi"},
		"team-eta--dev":  {"1", "250m", "256Mi"},
		"team-eta--prod": {"2", "500m", "512Mi"},
	}
	all := slices.Sorted(maps.Keys(wantShares))
	for _, ns := range all {
		n, ok := w.namespace(ns)
		switch {
		case !ok:
			t.Errorf("namespace %s missing", ns)
			continue
		case n.Labels[teamSpaceLabel] != name:
			t.Errorf("namespace %s has TeamSpace label %q, want %s", ns, n.Labels[teamSpaceLabel], name)
		case len(n.OwnerReferences) != 1 || string(n.OwnerReferences[0].UID) != string(ts.GetUID()):
			t.Errorf("namespace %s is owned by %v, want TeamSpace %s", ns, n.OwnerReferences, name)
		}
		if got := hard(ns); got != wantShares[ns] {
			t.Errorf("team-quota in %s = %+v, want %+v", ns, got, wantShares[ns])
		}
		if _, err := w.kube.RbacV1().RoleBindings(ns).Get(w.ctx, "team-owners", metav1.GetOptions{}); err != nil {
			t.Errorf("RoleBinding team-owners in %s: %v", ns, err)
		}
		np, err := w.kube.NetworkingV1().NetworkPolicies(ns).Get(w.ctx, "team-isolation", metav1.GetOptions{})
		if err != nil {
			t.Errorf("NetworkPolicy team-isolation in %s: %v", ns, err)
			continue
		}
		others := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == ns })
		from := np.Spec.Ingress[0].From
		if len(from) != 2 || from[1].NamespaceSelector == nil || len(from[1].NamespaceSelector.MatchExpressions) != 1 ||
			!slices.Equal(from[1].NamespaceSelector.MatchExpressions[0].Values, others) {
			t.Errorf("team-isolation in %s admits %+v, want its own pods and namespaces %v", ns, from, others)
		}
	}
	columns := w.columns(t, name)
	if columns["Pods"] != "4" || columns["CPU"] != "1" || columns["Memory"] != "1Gi" {
		t.Errorf("kubectl get %s shows %v, want the team's totals 4, 1, 1Gi", name, columns)
	}

	// Each namespace is held to its share by its own quota.
	ann := kubernetes.NewForConfigOrDie(w.as("ann"))
	pod := func(n string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: n}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
	}
	if _, err := ann.CoreV1().Pods("team-eta--dev").Create(w.ctx, pod("first"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("owner ann creating a pod in team-eta--dev: %v", err)
	}
	_, overErr := ann.CoreV1().Pods("team-eta--dev").Create(w.ctx, pod("second"), metav1.CreateOptions{})
	if overErr == nil || !strings.Contains(overErr.Error(), "exceeded quota") {
		t.Errorf("a second pod in team-eta--dev (share: 1 pod): %v, want refused by its quota", overErr)
	}
	w.poll(t, "team-eta--dev's quota counting 1 pod", func() bool { return w.quotaUsed("team-eta--dev") == "1" })
	if err := w.kube.CoreV1().Pods("team-eta--dev").Delete(w.ctx, "first", metav1.DeleteOptions{GracePeriodSeconds: ptrTo(int64(0))}); err != nil {
		t.Error(err)
	}

	// A share deleted by hand comes back.
	if err := w.kube.CoreV1().ResourceQuotas("team-eta--dev").Delete(w.ctx, quotaName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	w.poll(t, "team-eta--dev's quota back", func() bool { return hard("team-eta--dev") == wantShares["team-eta--dev"] })
	backIn := time.Since(deleted)

	// A share moved by the owner: dev gives 150m to team-eta.
	annTS := dynamic.NewForConfigOrDie(w.as("ann")).Resource(teamSpaces)
	asAnn := func(patch string) error {
		_, err := annTS.Patch(w.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		return err
	}
	moved := time.Now()
	if err := asAnn(entries(`{"name":"dev","pods":1,"cpu":"100m"}`, prod)); err != nil {
		t.Fatalf("owner ann moving 150m from dev to team-eta: %v", err)
	}
	w.poll(t, "the cpu moved from dev to team-eta", func() bool {
		return hard("team-eta--dev").cpu == "100m" && hard("team-eta").cpu == "400m"
	})
	movedIn := time.Since(moved)

	// An entry whose namespace someone else holds.
	squatted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-eta--qa"}}
	if _, err := w.kube.CoreV1().Namespaces().Create(w.ctx, squatted, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the admin making namespace team-eta--qa by hand: %v", err)
	}
	qa := `{"name":"qa","pods":1,"cpu":"100m"}`
	prod1 := `{"name":"prod","pods":1,"cpu":"500m","memory":"512Mi"}`
	w.patchTeamSpace(t, name, entries(`{"name":"dev","pods":1,"cpu":"100m"}`, prod1, qa))
	var reason, conflictMsg string
	w.poll(t, name+" says NamespaceConflict", func() bool {
		reason, conflictMsg = w.readyReason(name)
		return w.observedCurrent(name) && reason == "NamespaceConflict"
	})
	if !strings.Contains(conflictMsg, "team-eta--qa") {
		t.Errorf("the conflict does not name team-eta--qa: %s", conflictMsg)
	}
	w.poll(t, "prod's share down to 1 pod while qa waits", func() bool { return hard("team-eta--prod").pods == "1" })
	if _, ok := w.quota("team-eta--qa"); ok {
		t.Error("the team's quota was made in team-eta--qa, which is not the team's")
	}
	if err := w.kube.CoreV1().Namespaces().Delete(w.ctx, "team-eta--qa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "qa gets its namespace once the other is gone", func() bool {
		got := hard("team-eta--qa")
		return w.ready(name) && got.pods == "1" && got.cpu == "100m"
	})

	// An entry removed: its namespace stays, with its share, and the
	// team's four quotas still add up to its totals.
	qaBefore := hard("team-eta--qa")
	w.patchTeamSpace(t, name, entries(`{"name":"dev","pods":1,"cpu":"100m"}`, prod1))
	var keptMsg string
	w.poll(t, name+" says NamespaceKept", func() bool {
		reason, keptMsg = w.readyReason(name)
		return w.observedCurrent(name) && reason == "NamespaceKept"
	})
	if _, ok := w.namespace("team-eta--qa"); !ok {
		t.Error("namespace team-eta--qa was deleted with its entry")
	}
	total := func() share {
		var pods, cpu, memory resource.Quantity
		for _, ns := range []string{"team-eta", "team-eta--dev", "team-eta--prod", "team-eta--qa"} {
			h := hard(ns)
			for _, q := range []struct {
				sum *resource.Quantity
				v   string
			}{{&pods, h.pods}, {&cpu, h.cpu}, {&memory, h.memory}} {
				if v, err := resource.ParseQuantity(q.v); err == nil {
					q.sum.Add(v)
				}
			}
		}
		// In the totals' form: the quotas' quantities come in several.
		return share{canonical(pods, "4"), canonical(cpu, "1"), canonical(memory, "1Gi")}
	}
	var sum share
	w.poll(t, "the four quotas adding up to the totals", func() bool { sum = total(); return sum == share{"4", "1", "1Gi"} })
	if got := hard("team-eta--qa"); got != qaBefore {
		t.Errorf("team-eta--qa's kept quota went from %+v to %+v", qaBefore, got)
	}

	// The owner confirms the removal: the namespace is archived, then goes.
	qaNS, _ := w.namespace("team-eta--qa")
	if err := asAnn(`{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":"qa"}}}`); err != nil {
		t.Fatalf("owner ann confirming qa's removal: %v", err)
	}
	confirmed := time.Now()
	w.poll(t, "team-eta--qa gone once its removal is confirmed", func() bool { _, ok := w.namespace("team-eta--qa"); return !ok })
	removedIn := time.Since(confirmed)
	where, rec := w.findRecord(t, string(qaNS.UID))
	if rec == nil || rec["name"] != "team-eta--qa" || rec["entry"] != "qa" || rec["teamspace"] != name {
		t.Errorf("archive record of team-eta--qa (uid %s): %v at %q, want its name, entry and TeamSpace", qaNS.UID, rec, where)
	}
	w.poll(t, name+" Ready once qa is gone", func() bool { return w.ready(name) })
	if err := asAnn(`{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":null}}}`); err != nil {
		t.Errorf("owner ann taking the confirmation off: %v", err)
	}

	// Deleting the TeamSpace archives every namespace in its record.
	if err := w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+" gone", func() bool { return w.gone(name) })
	for _, ns := range []string{"team-eta", "team-eta--dev", "team-eta--prod"} {
		if _, ok := w.namespace(ns); ok {
			if n, _ := w.namespace(ns); n.DeletionTimestamp == nil {
				t.Errorf("namespace %s is left after its TeamSpace, not terminating", ns)
			}
		}
	}
	_, deletion := w.findRecord(t, string(ts.GetUID()))
	if got := fmt.Sprint(deletion["namespaces"]); got != "[team-eta team-eta--dev team-eta--prod]" {
		t.Errorf("%s's archive record lists namespaces %s, want all three", name, got)
	}
	w.evidence(t, "team-namespaces.json", map[string]any{
		"shares": fmt.Sprintf("%+v", wantShares), "kept_sum": fmt.Sprintf("%+v", sum), "columns": columns, "ready_in": readyIn.String(),
		"second_pod_in_dev_refused": errText(overErr), "quota_back_in": backIn.String(), "share_moved_in": movedIn.String(),
		"conflict": conflictMsg, "kept": keptMsg, "removal_record": where, "removed_in": removedIn.String(),
		"deletion_record_namespaces": deletion["namespaces"],
		"measured":                   fmt.Sprintf("TeamSpace %s as the admin; pods as owner ann; no kubelet runs them", name),
	})
}

// canonical prints q as want is written when they are equal, else q.
func canonical(q resource.Quantity, want string) string {
	if q.Cmp(resource.MustParse(want)) == 0 {
		return want
	}
	return q.String()
}
