package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/controlplane"
)

// TestOwnersDivideTheBudget (issue #52, items 4 and 6), by impersonation:
// an owner adds, changes and removes entries of spec.namespaces within the
// totals, which stay the platform's; the platform's maxNamespaces holds
// them; a removal is confirmed by annotation platform.labhub.io/remove-namespaces,
// the only annotation an owner may write, which never lists an entry that
// is there.
func TestOwnersDivideTheBudget(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	installGuardrails(t)
	installLimits(t)
	s := suffix(t, 6)
	owner, name := "owner-"+s, "div-"+s
	createOwned(t, name, ownedBy(with(within(), "pods", 8, "cpu", "2"), owner))
	patch := func(p string) error {
		t.Helper()
		_, err := kubectl(t, "", append(as(owner), "patch", "teamspace", name, "--type=merge", "-p", p)...)
		return err
	}
	entries := func(list ...string) string { return `{"spec":{"namespaces":[` + strings.Join(list, ",") + `]}}` }
	dev, prod := `{"name":"dev","pods":1,"cpu":"100m"}`, `{"name":"prod","pods":3,"cpu":"1"}`

	if err := patch(entries(dev)); err != nil {
		t.Fatalf("the owner adding entry dev: %v", err)
	}
	if err := patch(entries(`{"name":"dev","pods":2,"cpu":"300m"}`, prod)); err != nil {
		t.Errorf("the owner moving shares and adding prod: %v", err)
	}
	wantRefusedBy(t, "the owner raising spec.pods", patch(`{"spec":{"pods":9}}`), "teamspace-owner-updates", "this update also changes spec.pods")
	if err := patch(entries(`{"name":"dev","pods":8,"cpu":"100m"}`)); err == nil || !strings.Contains(err.Error(), "spec.namespaces") {
		t.Errorf("the owner's shares above the totals: %v, want refused naming spec.namespaces", err)
	}
	four := entries(dev, `{"name":"a","pods":1,"cpu":"100m"}`, `{"name":"b","pods":1,"cpu":"100m"}`, `{"name":"c","pods":1,"cpu":"100m"}`)
	wantRefusedBy(t, "the owner's fourth namespace", patch(four), "teamspace-limits", "maxNamespaces")

	// Removal: the annotation never lists an entry that is there.
	confirm := func(v string) string {
		return `{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":"` + v + `"}}}`
	}
	var err error
	if !eventually(10*time.Second, 200*time.Millisecond, func() bool { err = patch(confirm("dev")); return err != nil }) {
		t.Fatal("the owner listing dev for removal while the entry is there: admitted")
	}
	wantRefusedBy(t, "the owner listing dev for removal while the entry is there", err, "teamspace-namespace-removal", "take it out of the annotation first")
	wantRefusedBy(t, "a malformed list", patch(confirm("Dev!")), "teamspace-namespace-removal", "must list entry names")
	both := `{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":"dev"}},"spec":{"namespaces":[` + prod + `]}}`
	if err := patch(both); err != nil {
		t.Errorf("the owner dropping dev and confirming its removal: %v", err)
	}
	wantRefusedBy(t, "dev again while the annotation lists it", patch(entries(prod, dev)), "teamspace-namespace-removal", "spec.namespaces has entry dev")
	if err := patch(`{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":null}}}`); err != nil {
		t.Errorf("the owner taking the annotation off: %v", err)
	}
	if err := patch(entries(prod, dev)); err != nil {
		t.Errorf("dev again once the annotation is off: %v", err)
	}
	wantRefusedBy(t, "another annotation", patch(`{"metadata":{"annotations":{"platform.labhub.io/protected":"false"}}}`),
		"teamspace-owner-updates", "metadata.annotations[platform.labhub.io/protected]")
}

// TestTeamBudgetUnderConcurrentScaleUps (issue #52, item 3): a team of
// three namespaces with 6 pods and 600m in total, its namespaces and
// quotas made from the hook's answer; 45 pods created at once, 15 into
// each namespace, as its owner. The API server admits exactly each
// namespace's share (team-<name> 2, dev 1, prod 3): never more than the
// totals, whatever the interleaving, because each namespace's quota is its
// own and the shares add up to the totals. The same creates are run three
// times.
func TestTeamBudgetUnderConcurrentScaleUps(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	cp := controlplane.Need(t)
	s := suffix(t, 6)
	owner, name := "owner-"+s, "budget-"+s
	spec := ownedBy(map[string]any{"pods": 6, "cpu": "600m", "namespaces": []any{
		map[string]any{"name": "dev", "pods": 1, "cpu": "100m"},
		map[string]any{"name": "prod", "pods": 3, "cpu": "300m"},
	}}, owner)
	createOwned(t, name, spec)
	shares := map[string]int{
		teamspace.NamespaceName(name):              2,
		teamspace.ExtraNamespaceName(name, "dev"):  1,
		teamspace.ExtraNamespaceName(name, "prod"): 3,
	}
	cfg := benchConfig(t, cp.Kubeconfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: owner}
	client := kubernetes.NewForConfigOrDie(cfg).CoreV1()
	ctx := context.Background()
	for round := range 3 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		admitted := map[string]int{}
		var other []error
		for ns := range shares {
			for i := range 15 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("up-%d-%d", round, i)},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none"}}}}
					_, err := client.Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
					mu.Lock()
					defer mu.Unlock()
					switch {
					case err == nil:
						admitted[ns]++
					case !strings.Contains(err.Error(), "exceeded quota"):
						other = append(other, err)
					}
				}()
			}
		}
		wg.Wait()
		if len(other) > 0 {
			t.Fatalf("round %d: pods refused for another reason than the quota: %v", round, other[0])
		}
		total := 0
		for ns, want := range shares {
			total += admitted[ns]
			if admitted[ns] != want {
				t.Errorf("round %d: %d pods admitted in %s, want its share %d", round, admitted[ns], ns, want)
			}
		}
		if total > 6 {
			t.Errorf("round %d: %d pods admitted in the team's namespaces, above its total of 6", round, total)
		}
		for ns := range shares {
			if err := client.Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}, metav1.ListOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// The quota controller counts the deletions before the next round.
		if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
			for ns := range shares {
				if out, _ := kubectl(t, "", "-n", ns, "get", "resourcequota", "team-quota", "-o", "jsonpath={.status.used.pods}"); out != "0" {
					return false
				}
			}
			return true
		}) {
			t.Fatalf("round %d: the quotas do not count 0 pods 30s after the deletions", round)
		}
	}
}
