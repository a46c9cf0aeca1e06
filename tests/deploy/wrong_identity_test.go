package deploy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// TestEngineWithoutTeamNamespaceGrant: an install whose engine identity may
// not create team-* namespaces (namespaces.yaml refuses it: here the grant
// is taken out of the engine's role after install.sh, as a wrong or
// hand-narrowed role would have it). With the real engine: the TeamSpace
// gets no namespace, its status says it waits for one and where the reason
// is, the engine records the refusal as an event on the TeamSpace, and a
// namespace that exists is not touched. The grant put back, the same
// TeamSpace gets its namespace.
func TestEngineWithoutTeamNamespaceGrant(t *testing.T) {
	needCluster(t)
	crds := metacontrollerCRDs(t)
	skipIfInstalled(t)
	in := newInstall(t, crds)
	if !in.real {
		testenv.NeedEngine(t, "tests/deploy: TestEngineWithoutTeamNamespaceGrant (what the engine does with a refused namespace)")
	}
	const ts, bystander = "wrong-identity", "team-wrong-identity-bystander"
	t.Cleanup(func() {
		removeTeamSpace(t, ts)
		if r := deployScript(t, in.env, "uninstall.sh"); r.err != nil {
			t.Errorf("cleanup: uninstall.sh (the engine it starts would outlive the test): %v", r)
		}
		kubectl(t, "delete", "namespace", bystander, "--ignore-not-found", "--wait=false")
		removeAdmissionPolicies(t)
	})
	if r := deployScript(t, in.env, "install.sh"); r.err != nil {
		t.Fatalf("install.sh: %v", r)
	}
	kubectlOK(t, "create", "namespace", bystander)
	before := kubectlOK(t, "get", "namespace", bystander, "-o", "jsonpath={.metadata.resourceVersion}")

	// Take the teamnamespaces grant out of the engine's role.
	var role map[string]any
	if err := json.Unmarshal([]byte(kubectlOK(t, "get", "clusterrole", engineRole, "-o", "json")), &role); err != nil {
		t.Fatal(err)
	}
	var kept []any
	for _, r := range role["rules"].([]any) {
		if !strings.Contains(fmt.Sprint(r), "teamnamespaces") {
			kept = append(kept, r)
		}
	}
	if len(kept) == len(role["rules"].([]any)) {
		t.Fatal("the engine's role has no teamnamespaces rule to take out")
	}
	patch, _ := json.Marshal(map[string]any{"rules": kept})
	kubectlOK(t, "patch", "clusterrole", engineRole, "--type=merge", "-p", string(patch))

	createTeamSpace(t, []byte(`{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"`+ts+`"},"spec":{"pods":2,"memory":"1Gi"}}`))
	waitFor(t, 60*time.Second, "the engine's SyncError event naming teamspace-namespaces", func() error {
		ev := kubectl(t, "get", "events", "--all-namespaces", "--field-selector", "involvedObject.name="+ts+",reason=SyncError", "-o", "jsonpath={.items[*].message}")
		if !strings.Contains(ev.stdout, "teamspace-namespaces") {
			return fmt.Errorf("events so far: %q; engine log:\n%s", ev.stdout, readLog(in.destdir, "metacontroller"))
		}
		return nil
	})
	msg := kubectlOK(t, "get", "teamspaces.platform.labhub.io", ts, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].message}`)
	if !strings.Contains(msg, "creating namespace team-"+ts) || !strings.Contains(msg, "kubectl describe teamspace "+ts) {
		t.Errorf("status message %q: want it to wait for team-%s and say where the engine's error is", msg, ts)
	}
	if exists(t, "namespace", "team-"+ts) {
		t.Errorf("namespace team-%s exists although the engine may not create it", ts)
	}
	if after := kubectlOK(t, "get", "namespace", bystander, "-o", "jsonpath={.metadata.resourceVersion}"); after != before {
		t.Errorf("namespace %s changed (resourceVersion %s -> %s)", bystander, before, after)
	}

	// install.sh again puts the grant back; the TeamSpace then gets its
	// namespace.
	if r := deployScript(t, in.env, "install.sh"); r.err != nil {
		t.Fatalf("install.sh again: %v", r)
	}
	waitFor(t, 90*time.Second, "namespace team-"+ts+" once the grant is back", func() error {
		if !exists(t, "namespace", "team-"+ts) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
}
