package cluster_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

const (
	protectedKey   = "platform.labhub.io/protected"
	allowDeleteKey = "platform.labhub.io/allow-delete"
	testFinalizer  = "metacontroller.io/compositecontroller-teamspace"
)

// installGuardrails applies hack/deploy/guardrails.yaml and waits until the
// API server enforces it (a policy takes a moment to be loaded). Like the
// limits, it stays installed, as in every install (the platform's
// kustomization.yaml lists it): the tests running beside it never delete a
// TeamSpace annotated protected (TestStatus lifts the annotation first) nor
// the CRD (TestGuardrailsCRD runs alone).
func installGuardrails(t testing.TB) {
	t.Helper()
	installCRD(t)
	testenv.Setup(t, "guardrails", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "guardrails.yaml"))
		if !eventually(30*time.Second, 200*time.Millisecond, func() bool { return guardrailsEnforced(t) }) {
			t.Fatal("the guard-rails policy is not enforced 30s after applying it")
		}
	})
}

// guardrailsEnforced tells whether the API server enforces the guard-rails
// policy now: a server dry run of a TeamSpace with a malformed protected
// annotation is refused by it.
func guardrailsEnforced(t testing.TB) bool {
	probe := annotated(teamSpace("guard-probe", map[string]any{"pods": 1}), protectedKey, "yes")
	_, err := kubectl(t, probe, "create", "--dry-run=server", "-f", "-")
	return err != nil && strings.Contains(err.Error(), "teamspace-guardrails")
}

// annotated and labelled give a manifest made by teamSpace one annotation
// or one label.
func annotated(manifest, key, value string) string {
	return withMeta(manifest, "annotations", key, value)
}
func labelled(manifest, key, value string) string { return withMeta(manifest, "labels", key, value) }

func withMeta(manifest, kind, key, value string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(manifest), &obj); err != nil {
		panic(err)
	}
	meta := obj["metadata"].(map[string]any)
	meta[kind] = map[string]any{key: value}
	b, _ := json.Marshal(obj)
	return string(b)
}

// metaOf is one annotation or label (kind "annotations" or "labels") of
// TeamSpace name, and whether it is there.
func metaOf(t *testing.T, name, kind, key string) (string, bool) {
	t.Helper()
	obj, found := getObject(t, "teamspace", name)
	if !found {
		t.Fatalf("TeamSpace %s not found", name)
	}
	m, _ := field(obj, "metadata", kind).(map[string]any)
	v, ok := m[key]
	return str(v), ok
}

// wantRefused checks that err is the policy's refusal and says every part
// of want.
func wantRefused(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: accepted, want refused by the guard-rails policy", what)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, "teamspace-guardrails") {
		t.Errorf("%s: refused, but not by the guard-rails policy: %v", what, err)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message lacks %q: %v", what, w, err)
		}
	}
}

// wantAccepted checks that a write went through.
func wantAccepted(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: refused, want accepted: %v", what, err)
	}
}

// TestGuardrailsTeamSpace is every row of the policy for TeamSpaces: what
// it refuses (with which message) and what it must let through.
func TestGuardrailsTeamSpace(t *testing.T) {
	alone(t, "it deletes every TeamSpace (kubectl delete --all, deletecollection)")
	installGuardrails(t)
	s := suffix(t, 6)
	prot, plain := "gr-p-"+s, "gr-u-"+s
	for _, n := range []string{prot, plain} {
		deleteOnCleanup(t, "teamspace", n)
		t.Cleanup(func() {
			_, _ = kubectl(t, "", "annotate", "teamspace", n, protectedKey+"-")
			_, _ = kubectl(t, "", "patch", "teamspace", n, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		})
	}

	// Malformed values are refused on CREATE and UPDATE, for either name.
	for _, v := range []string{"yes", "TRUE", "True", "1", ""} {
		_, err := kubectl(t, annotated(teamSpace("gr-bad-"+s, map[string]any{"pods": 1}), protectedKey, v), "create", "-f", "-")
		wantRefused(t, fmt.Sprintf("create with %s=%q", protectedKey, v), err, protectedKey, `must be "true" or "false"`, `not "`+v+`"`)
	}
	wantAccepted(t, "create protected", func() error {
		_, err := kubectl(t, annotated(teamSpace(prot, map[string]any{"pods": 1}), protectedKey, "true"), "create", "-f", "-")
		return err
	}())
	wantAccepted(t, "create unannotated", func() error {
		_, err := kubectl(t, teamSpace(plain, map[string]any{"pods": 1}), "create", "-f", "-")
		return err
	}())
	for _, v := range []string{"yes", "TRUE"} {
		_, err := kubectl(t, "", "annotate", "--overwrite", "teamspace", plain, protectedKey+"="+v)
		wantRefused(t, "annotate "+v, err, `not "`+v+`"`)
	}

	// What must pass on a protected TeamSpace: spec, labels, status, and
	// the engine's finalizer added and (during deletion) removed.
	_, err := kubectl(t, "", "patch", "teamspace", prot, "--type=merge", "-p", `{"spec":{"pods":3}}`)
	wantAccepted(t, "spec update of a protected TeamSpace", err)
	_, err = kubectl(t, "", "label", "teamspace", prot, "team=a")
	wantAccepted(t, "label a protected TeamSpace", err)
	_, err = kubectl(t, "", "patch", "teamspace", prot, "--subresource=status", "--type=merge",
		"-p", `{"status":{"namespace":"team-x"}}`)
	wantAccepted(t, "status write of a protected TeamSpace", err)
	_, err = kubectl(t, "", "patch", "teamspace", prot, "--type=merge", "-p",
		fmt.Sprintf(`{"metadata":{"finalizers":[%q]}}`, testFinalizer))
	wantAccepted(t, "add the engine's finalizer", err)
	_, err = kubectl(t, "", "annotate", "--overwrite", "teamspace", prot, protectedKey+"=true")
	wantAccepted(t, "annotate true again", err)

	// DELETE of the protected one: refused, with how to lift it.
	_, err = kubectl(t, "", "delete", "teamspace", prot, "--wait=false")
	wantRefused(t, "delete protected", err, "TeamSpace "+prot+" is protected", "team-"+prot,
		"kubectl annotate teamspace "+prot+" "+protectedKey+"-")

	// kubectl delete --all deletes the others and keeps the protected one;
	// so does the API's deletecollection.
	_, err = kubectl(t, "", "delete", "teamspace", "--all", "--wait=false")
	wantRefused(t, "delete --all", err, prot)
	if _, found := getObject(t, "teamspace", plain); found {
		t.Errorf("delete --all: unprotected %s was not deleted", plain)
	}
	_, err = kubectl(t, "", "delete", "--raw", "/apis/"+groupVersion+"/teamspaces")
	wantRefused(t, "deletecollection", err, prot)
	obj, found := getObject(t, "teamspace", prot)
	if !found || str(field(obj, "metadata", "deletionTimestamp")) != "" {
		t.Fatalf("protected %s did not survive delete --all and deletecollection", prot)
	}

	// "false" is accepted and protects nothing; a TeamSpace whose deletion
	// has begun can be protected again, and the engine can still remove its
	// finalizer (an UPDATE that leaves the annotation as it is).
	_, err = kubectl(t, "", "annotate", "--overwrite", "teamspace", prot, protectedKey+"=false")
	wantAccepted(t, "annotate false", err)
	_, err = kubectl(t, "", "delete", "teamspace", prot, "--wait=false")
	wantAccepted(t, "delete after lifting", err)
	_, err = kubectl(t, "", "annotate", "--overwrite", "teamspace", prot, protectedKey+"=true")
	wantAccepted(t, "protect while deleting", err)
	_, err = kubectl(t, "", "patch", "teamspace", prot, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	wantAccepted(t, "finalizer removal of a protected TeamSpace being deleted", err)
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		_, found := getObject(t, "teamspace", prot)
		return !found
	}) {
		t.Errorf("%s is still there after its finalizer was removed", prot)
	}
}

// TestGuardrailsLeaveGCAlone: the garbage collector deletes the namespace
// of a deleted TeamSpace with the policy installed (namespaces are not
// matched, and the owner is already gone).
func TestGuardrailsLeaveGCAlone(t *testing.T) {
	parallel(t)
	installGuardrails(t)
	checkGarbageCollection(t)
}

// TestGuardrailsCRD: deleting the TeamSpace CRD is refused until it carries
// allow-delete "true", and a malformed allow-delete is refused. The CRD is
// really deleted at the end (with a protected TeamSpace in it: the CRD's
// own cleanup does not go through admission) and installed again.
func TestGuardrailsCRD(t *testing.T) {
	alone(t, deletesCRD)
	installGuardrails(t)
	t.Cleanup(func() {
		testenv.Undo("crd") // deleted, or its annotation changed: applied again
		installCRD(t)
	})
	name := "gr-crd-" + suffix(t, 6)
	mustKubectl(t, annotated(teamSpace(name, map[string]any{"pods": 1}), protectedKey, "true"), "create", "-f", "-")

	_, err := kubectl(t, "", "delete", "crd", crdName, "--wait=false")
	wantRefused(t, "delete CRD", err, "every team namespace",
		"kubectl annotate crd "+crdName+" "+allowDeleteKey+"=true")
	for _, v := range []string{"yes", "TRUE"} {
		_, err = kubectl(t, "", "annotate", "--overwrite", "crd", crdName, allowDeleteKey+"="+v)
		wantRefused(t, "annotate CRD "+v, err, allowDeleteKey, `not "`+v+`"`)
	}
	_, err = kubectl(t, "", "annotate", "--overwrite", "crd", crdName, allowDeleteKey+"=false")
	wantAccepted(t, "annotate CRD false", err)
	_, err = kubectl(t, "", "delete", "crd", crdName, "--wait=false")
	wantRefused(t, "delete CRD with allow-delete=false", err, "every team namespace")
	// Re-applying crd.yaml (install.sh, up.sh) is an UPDATE that must pass.
	applyCRD(t)
	if _, found := getObject(t, "teamspace", name); !found {
		t.Fatalf("TeamSpace %s is gone after the refused CRD deletes", name)
	}

	_, err = kubectl(t, "", "annotate", "--overwrite", "crd", crdName, allowDeleteKey+"=true")
	wantAccepted(t, "annotate CRD true", err)
	_, err = kubectl(t, "", "delete", "crd", crdName, "--timeout=60s")
	wantAccepted(t, "delete CRD with allow-delete=true", err)
	if _, found := getObject(t, "crd", crdName); found {
		t.Errorf("CRD still there after delete")
	}
}
