package robust_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/robust"
	"github.com/labhub/teamspace/tests/testenv"
)

func TestMain(m *testing.M) { os.Exit(controlplane.Main(m)) }

func kubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestRecorder records what a cluster does, without the engine, standing
// in for it by hand: TeamSpace good deleted as the engine does it (its
// record stored, then its namespace deleted), TeamSpace bad's namespace
// deleted before its record is (a finalize answered before the write).
// The history holds what happened in order; the invariants find bad's and
// only bad's; a quota deleted and made again is a gap of about as long.
func TestRecorder(t *testing.T) {
	controlplane.Need(t)
	kubectl(t, "", "apply", "-f", filepath.Join(testenv.RepoRoot(), "crd.yaml"))
	kubectl(t, "", "wait", "--for=condition=established", "--timeout=60s", "crd/teamspaces.platform.labhub.io")
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	kube, dyn := kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
	dir := t.TempDir()
	rec := &robust.Recorder{Kube: kube, Dynamic: dyn, Archive: robust.DirArchive(dir), Interval: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Run(ctx) }()

	uids := map[string]string{}
	for _, name := range []string{"good", "bad"} {
		kubectl(t, fmt.Sprintf(`{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"rec-%s","finalizers":["example.com/keep"]},"spec":{"pods":2,"cpu":"1"}}`, name), "create", "-f", "-")
		uids[name] = kubectl(t, "", "get", "teamspace", "rec-"+name, "-o", "jsonpath={.metadata.uid}")
		kubectl(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-rec-%s","ownerReferences":[{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","name":"rec-%s","uid":%q,"controller":true}]}}`, name, name, uids[name]), "create", "-f", "-")
		kubectl(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"team-quota"},"spec":{"hard":{"pods":"2","requests.cpu":"1"}}}`, "-n", "team-rec-"+name, "create", "-f", "-")
	}
	store := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, "rec-"+name+".json"), []byte(fmt.Sprintf(`{"name":"rec-%s","uid":%q}`, name, uids[name])), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond)
	kubectl(t, "", "-n", "team-rec-good", "delete", "resourcequota", "team-quota")
	time.Sleep(time.Second)
	kubectl(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"team-quota"},"spec":{"hard":{"pods":"2","requests.cpu":"1"}}}`, "-n", "team-rec-good", "create", "-f", "-")
	time.Sleep(300 * time.Millisecond)

	// good: deletion asked, record stored, then its namespace deleted.
	kubectl(t, "", "delete", "teamspace", "rec-good", "--wait=false")
	store("good")
	time.Sleep(1100 * time.Millisecond) // past the second the record is in
	kubectl(t, "", "delete", "namespace", "team-rec-good", "--wait=false")
	// bad: its namespace deleted first, its record a second later.
	kubectl(t, "", "delete", "teamspace", "rec-bad", "--wait=false")
	kubectl(t, "", "delete", "namespace", "team-rec-bad", "--wait=false")
	time.Sleep(1100 * time.Millisecond)
	store("bad")
	for _, name := range []string{"good", "bad"} {
		kubectl(t, "", "patch", "teamspace", "rec-"+name, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	}
	time.Sleep(time.Second)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	h := rec.History()
	kinds := map[robust.Kind]int{}
	for _, e := range h.Events {
		kinds[e.Kind]++
	}
	for _, k := range []robust.Kind{robust.TeamSpaceDeleting, robust.TeamSpaceGone, robust.NamespaceSeen, robust.NamespaceDeleting, robust.RecordStored} {
		if kinds[k] != 2 {
			t.Errorf("%d events %s, want 2 (one per TeamSpace): %v", kinds[k], k, kinds)
		}
	}
	if g := robust.QuotaGaps(h)["team-rec-good"]; g < 800*time.Millisecond || g > 5*time.Second {
		t.Errorf("team-rec-good's quota gap %s, want about the 1 s it was deleted", g)
	}
	if kinds[robust.ReadySample] == 0 {
		t.Error("no Ready samples")
	}
	// Nobody makes them Ready here (no engine), and no fault was
	// injected: there is nothing to recover from.
	v := robust.Check(h, robust.Bounds{QuotaGap: 10 * time.Second, ReadyAfterFaults: time.Second, MemoryGrowth: 2})
	if len(v) != 1 || v[0].Invariant != "record-before-namespaces" || !strings.Contains(v[0].Message, "team-rec-bad") {
		t.Errorf("violations %v, want record-before-namespaces for team-rec-bad alone", v)
	}
}
