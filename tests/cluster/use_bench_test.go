package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// BenchmarkPodAdmission measures what the policies of what a team may use
// (hack/deploy/team-use.yaml, issue #51) add to a pod created in a team
// namespace: the owner's pod (two containers from an allowed registry, a
// toleration, the kube-api-access token the API server adds) as a server
// dry run, one client, one request at a time, so ns/op is the request's
// latency through admission; in a team namespace as most are, and in one
// with a node selector (which the mutation fills in) and a class of its
// own. "absent" is without team-use.yaml, "team-use" with it and every
// key set (registries, the five class lists, taints, token lifetime).
// Measured A B B A. Run it with
//
//	go test -run '^$' -bench PodAdmission -benchtime 300x -count 2 ./tests/cluster
func BenchmarkPodAdmission(b *testing.B) {
	cp := controlplane.Need(b)
	installLimits(b)
	cfg := benchConfig(b, cp.Kubeconfig)
	s := suffix(b, 6)
	owner := "bench-owner-" + s
	// Two namespaces the policies take for teams': one as most teams have
	// it (the TeamSpace label), one pinned to nodes and given a class
	// (what the hook writes from spec.nodeSelector and spec.allow).
	plain, pinned := "bench-use-"+s, "bench-pinned-"+s
	for _, ns := range []string{plain, pinned} {
		meta := map[string]any{"name": ns, "labels": map[string]any{v1alpha1.TeamSpaceLabel: ns}}
		if ns == pinned {
			meta["labels"].(map[string]any)[v1alpha1.NodeSelectorLabel] = "true"
			meta["annotations"] = map[string]any{v1alpha1.NodeSelectorAnnotation: "pool=bench", v1alpha1.AllowedAnnotationPrefix + "priority-classes": "team-high"}
		}
		nsJSON, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": meta})
		mustKubectl(b, string(nsJSON), "create", "-f", "-")
		b.Cleanup(func() { _, _ = kubectl(b, "", "delete", "namespace", ns, "--wait=false") })
		mustKubectl(b, "", "-n", ns, "create", "rolebinding", "owner", "--clusterrole=admin", "--user="+owner)
		if !eventually(60*time.Second, 250*time.Millisecond, func() bool {
			_, err := kubectl(b, "", "get", "serviceaccount", "default", "-n", ns)
			return err == nil
		}) {
			b.Fatalf("no ServiceAccount default in %s after 60s", ns)
		}
	}
	ocfg := rest.CopyConfig(cfg)
	ocfg.Impersonate = rest.ImpersonationConfig{UserName: owner}
	client := kubernetes.NewForConfigOrDie(ocfg).CoreV1()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "web", Image: "registry.example.com/team/web:1.2.3"},
				{Name: "proxy", Image: "registry.example.com/proxy@sha256:" + hex32 + hex32},
			},
			Tolerations: []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		},
	}
	create := func(ns string, i int) error {
		p := pod.DeepCopy()
		p.Name = fmt.Sprintf("web-%d", i)
		_, err := client.Pods(ns).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	keys := map[string]string{
		"allowedRegistries": "registry.example.com, ghcr.io/acme", "allowedStorageClasses": "team-hdd", "allowedPriorityClasses": "low",
		"allowedRuntimeClasses": "runc", "allowedIngressClasses": "public", "allowedGateways": "infra/public",
		"forbiddenTolerations": "node-role.kubernetes.io/control-plane,node-role.kubernetes.io/master", "maxTokenLifetime": "24h",
	}
	b.Cleanup(func() { resetLimitsConfig(b) })
	for _, config := range []string{"absent", "team-use", "team-use", "absent"} {
		switch config {
		case "absent":
			mustKubectl(b, "", "delete", "--ignore-not-found", "-f", deployFile(b, "team-use.yaml"))
			testenv.Undo("owner-access")
			// The mutation gone: the pod keeps no node selector.
			if !eventually(30*time.Second, 200*time.Millisecond, func() bool { return nodeSelectorOf(b, client.Pods(pinned), pod) == "" }) {
				b.Fatal("team-use.yaml still mutates pods 30s after deleting it")
			}
		case "team-use":
			mustKubectl(b, "", "apply", "-f", deployFile(b, "team-use.yaml"))
			for k, v := range keys {
				setLimit(b, k, v)
			}
			if !eventually(30*time.Second, 200*time.Millisecond, func() bool { return nodeSelectorOf(b, client.Pods(pinned), pod) == "pool=bench" }) {
				b.Fatal("team-use.yaml does not fill the node selector in 30s after applying it")
			}
		}
		for i := range 100 { // warm-up
			for _, ns := range []string{plain, pinned} {
				if err := create(ns, i); err != nil {
					b.Fatal(err)
				}
			}
		}
		for _, ns := range []string{plain, pinned} {
			where := "team"
			if ns == pinned {
				where = "team-with-node-selector"
			}
			b.Run("policy="+config+"/create-pod-in-"+where, func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := create(ns, i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// nodeSelectorOf is the node selector a dry-run create of pod comes back
// with, as key=value pairs ("" for none, or an error).
func nodeSelectorOf(b testing.TB, pods interface {
	Create(context.Context, *corev1.Pod, metav1.CreateOptions) (*corev1.Pod, error)
}, pod *corev1.Pod) string {
	got, err := pods.Create(context.Background(), pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		b.Logf("probe: %v", err)
		return "error"
	}
	out := ""
	for k, v := range got.Spec.NodeSelector {
		out += k + "=" + v
	}
	return out
}
