package cluster_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

var teamSpaces = schema.GroupVersionResource{Group: "platform.labhub.io", Version: "v1alpha1", Resource: "teamspaces"}

// BenchmarkAdmission measures what the admission policies add to TeamSpace
// writes: the same create, update and delete with no policy ("absent"),
// with the guard rails (hack/deploy/guardrails.yaml) and with the guard
// rails and the platform limits (hack/deploy/limits.yaml), one client, one
// request at a time, so ns/op is the request's latency through admission.
// "create" is the admin's (system:masters: the limits' exempt path),
// "create-requester" a teamspace-requester's within the limits (every limit
// evaluated). Creates and delete are server dry runs (admission runs,
// nothing is stored); update is a real annotation write. Each configuration
// is measured twice (A B C C B A) so that the datastore growing over the
// run does not count against the later ones. Run it with
//
//	go test -run '^$' -bench Admission -benchtime 300x -count 5 ./tests/cluster
func BenchmarkAdmission(b *testing.B) {
	cp := controlplane.Need(b)
	installCRD(b)
	cfg := benchConfig(b, cp.Kubeconfig)
	dyn := dynamic.NewForConfigOrDie(cfg).Resource(teamSpaces)
	// A requester, impersonated (the admin may impersonate).
	requester := "bench-requester-" + suffix(b, 6)
	mustKubectl(b, "", "apply", "-f", deployFile(b, "roles.yaml"))
	mustKubectl(b, "", "create", "clusterrolebinding", requester, "--clusterrole=teamspace-requester", "--user="+requester)
	b.Cleanup(func() { _, _ = kubectl(b, "", "delete", "clusterrolebinding", requester) })
	if !eventually(30*time.Second, 100*time.Millisecond, func() bool {
		return probe(b, as(requester), with(within(), "pods", 1)) == nil
	}) {
		b.Fatalf("requester %s cannot create a TeamSpace 30s after its binding", requester)
	}
	rcfg := rest.CopyConfig(cfg)
	rcfg.Impersonate = rest.ImpersonationConfig{UserName: requester}
	asRequester := dynamic.NewForConfigOrDie(rcfg).Resource(teamSpaces)
	ctx := context.Background()
	name := "bench-admission-" + suffix(b, 6)
	objects := map[string]any{} // within()'s, as unstructured holds numbers
	for k, v := range shippedDefaultObjects {
		objects[k] = int64(v.(int))
	}
	obj := func(n string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": groupVersion, "kind": "TeamSpace",
			"metadata": map[string]any{"name": n}, "spec": map[string]any{"pods": int64(1), "memory": "1Gi", "ephemeralStorage": "1Gi", "objects": objects},
		}}
	}
	if _, err := dyn.Create(ctx, obj(name), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = dyn.Delete(ctx, name, metav1.DeleteOptions{}) })
	dryRun := []string{metav1.DryRunAll}
	ops := []struct {
		op  string
		run func(i int) error
	}{
		{"create", func(i int) error {
			_, err := dyn.Create(ctx, obj(fmt.Sprintf("%s-%d", name, i)), metav1.CreateOptions{DryRun: dryRun})
			return err
		}},
		{"create-requester", func(i int) error {
			_, err := asRequester.Create(ctx, obj(fmt.Sprintf("%s-r%d", name, i)), metav1.CreateOptions{DryRun: dryRun})
			return err
		}},
		{"update", func(i int) error {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{"bench":"%d"}}}`, i)
			_, err := dyn.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			return err
		}},
		{"delete", func(int) error { return dyn.Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRun}) }},
	}
	// Warm up the API server's paths (the first policy measured would
	// otherwise also pay for caches being filled).
	for i := range 100 {
		for _, o := range ops {
			if err := o.run(i); err != nil {
				b.Fatal(err)
			}
		}
	}
	// Each configuration twice, in the order A B C C B A: the datastore
	// grows with every update, and a later configuration would otherwise
	// pay for that too.
	for _, policy := range []string{"absent", "guardrails", "guardrails+limits", "guardrails+limits", "guardrails", "absent"} {
		switch policy {
		case "absent":
			removeLimits(b, requester)
			removeGuardrails(b)
		case "guardrails":
			removeLimits(b, requester)
			installGuardrails(b)
		case "guardrails+limits":
			installGuardrails(b)
			installLimitsPolicy(b)
		}
		for _, o := range ops {
			b.Run("policy="+policy+"/"+o.op, func(b *testing.B) {
				for i := 0; b.Loop(); i++ {
					if err := o.run(i); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchConfig is the admin's client configuration for an admission
// benchmark: the client's rate limiter must not be what is measured.
func benchConfig(b testing.TB, kubeconfig string) *rest.Config {
	b.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1e6, 1e6
	return cfg
}

// removeGuardrails deletes the policy if present and waits until the API
// server no longer enforces it.
func removeGuardrails(b testing.TB) {
	b.Helper()
	mustKubectl(b, "", "delete", "--ignore-not-found", "-f", deployFile(b, "guardrails.yaml"))
	testenv.Undo("guardrails")
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool { return !guardrailsEnforced(b) }) {
		b.Fatal("the guard-rails policy is still enforced 30s after deleting it")
	}
}

// removeLimits deletes the limits policy if present and waits until the API
// server no longer enforces it: a privileged TeamSpace of the requester
// (bound to teamspace-requester) is admitted (server dry run).
func removeLimits(b testing.TB, requester string) {
	b.Helper()
	mustKubectl(b, "", "delete", "--ignore-not-found", "-f", deployFile(b, "limits.yaml"))
	testenv.Undo("limits")
	privileged := map[string]any{"pods": 1, "podSecurity": "privileged"}
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		return probe(b, as(requester), privileged) == nil
	}) {
		b.Fatal("the limits policy is still enforced 30s after deleting it")
	}
}
