package cluster_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/testenv"
)

// The platform limits (hack/deploy/limits.yaml, limits-config.yaml) tried
// as an attacker would: through impersonation (kubectl --as), with the
// shipped roles, on an API server that allows privileged pods as k3s does
// (tests/controlplane runs it with --allow-privileged=true).

const (
	limitsPolicy    = "teamspace-limits"
	limitsNamespace = "teamspace-system"
	limitsConfigMap = "teamspace-limits"
	limitsSource    = "ConfigMap teamspace-system/teamspace-limits"
	engineIdentity  = "system:serviceaccount:teamspace-system:metacontroller"
	platformGroup   = "platform-team"
)

// deployFile is a file of hack/deploy (a manifest, a script).
func deployFile(t testing.TB, name string) string {
	return filepath.Join(repoRoot(t), "hack", "deploy", name)
}

// installLimits applies what install.sh applies for the limits: the engine's
// RBAC (rbac.yaml: namespace teamspace-system, the engine's ServiceAccount
// and role), the shipped roles, the policy with its bindings and the
// shipped ConfigMap with exemptGroups set to platformGroup, and the record
// of who asked (requested-by.yaml, installRequestedBy), and waits until
// the API server decides by them. All of it stays installed, like the CRD
// (every admin's write is exempt, so the other tests do not notice): the
// tests change only the ConfigMap, each alone and setting it back
// (resetLimitsConfig) when it ends, so the parallel tests find the
// shipped limits. Deleting and re-creating the policy
// between tests once left admission reading a stale copy of the ConfigMap
// for minutes (seen in a full run of this package, not reproduced alone).
//
// requested-by.yaml is part of it because it changes what a requester's
// TeamSpace becomes (defaults for memory, ephemeral storage and objects):
// with it installed by whichever test came first, a test of the limits
// alone would see one or the other depending on the order the tests ran
// in (TestLimitsRequester's unset memory was admitted in a parallel run).
// TestRequestedByWithoutMutation is the one test without it.
func installLimits(t testing.TB) {
	t.Helper()
	installLimitsPolicy(t)
	installRequestedBy(t)
}

// installLimitsPolicy is installLimits without requested-by.yaml
// (BenchmarkAdmission measures the limits policy alone).
func installLimitsPolicy(t testing.TB) {
	t.Helper()
	installCRD(t)
	testenv.Setup(t, "limits", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "rbac.yaml"), "-f", deployFile(t, "roles.yaml"), "-f", deployFile(t, "limits.yaml"))
		if _, err := kubectl(t, "", "get", "clusterrolebinding", limitsProbeUser); err != nil {
			mustKubectl(t, "", "create", "clusterrolebinding", limitsProbeUser, "--clusterrole=teamspace-requester", "--user="+limitsProbeUser)
		}
		resetLimitsConfig(t)
	})
}

// limitsProbeUser is a requester the tests' probes impersonate.
const limitsProbeUser = "teamspace-limits-probe"

// resetLimitsConfig applies the shipped ConfigMap with platformGroup exempt
// and waits until admission decides by it: a requester at exactly the
// shipped limits is admitted and one pod above them refused, a
// platformGroup member one pod above them admitted (server dry runs). The
// API server reads parameter objects through an informer, so a change takes
// a moment to count.
func resetLimitsConfig(t testing.TB) {
	t.Helper()
	mustKubectl(t, "", "apply", "-f", deployFile(t, "limits-config.yaml"))
	setLimit(t, "exemptGroups", platformGroup)
	atLimits := atTheLimits()
	above := with(atLimits, "pods", 11)
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		return probe(t, as(limitsProbeUser), atLimits) == nil &&
			probe(t, as(limitsProbeUser), above) != nil &&
			probe(t, as(limitsProbeUser, platformGroup), above) == nil
	}) {
		t.Fatalf("admission does not follow the shipped limits 10s after applying them: at the limits %v; above as %s: %v",
			probe(t, as(limitsProbeUser), atLimits), platformGroup, probe(t, as(limitsProbeUser, platformGroup), above))
	}
}

// setLimit writes one key of the ConfigMap.
func setLimit(t testing.TB, key, value string) {
	t.Helper()
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{key: value}})
	mustKubectl(t, "", "-n", limitsNamespace, "patch", "configmap", limitsConfigMap, "--type=merge", "-p", string(patch))
}

// probe is a server dry run of a TeamSpace create as who.
func probe(t testing.TB, who []string, spec map[string]any) error {
	_, err := kubectl(t, teamSpace("limits-probe", spec), append(who, "create", "--dry-run=server", "-f", "-")...)
	return err
}

// settled waits until a probe as the requester probe user with spec is
// refused with a message containing want: the ConfigMap's change counts.
func settled(t testing.TB, spec map[string]any, want string) {
	t.Helper()
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err := probe(t, as(limitsProbeUser), spec)
		return err != nil && strings.Contains(err.Error(), want)
	}) {
		t.Fatalf("a requester's probe is not refused with %q 10s after the change: %v", want, probe(t, as(limitsProbeUser), spec))
	}
}

// bindRole binds a ClusterRole to a user or group for the test.
func bindRole(t *testing.T, role, kind, name string) {
	t.Helper()
	b := "ts-test-" + suffix(t, 8)
	flag := "--user=" + name
	if kind == "Group" {
		flag = "--group=" + name
	}
	mustKubectl(t, "", "create", "clusterrolebinding", b, "--clusterrole="+role, flag)
	deleteOnCleanup(t, "clusterrolebinding", b)
}

// as is kubectl as user (with groups), through impersonation.
func as(user string, groups ...string) []string {
	args := []string{"--as=" + user}
	for _, g := range groups {
		args = append(args, "--as-group="+g)
	}
	return args
}

// createAs creates a TeamSpace as who and removes it (finalizers and all)
// when the test ends.
func createAs(t *testing.T, who []string, name string, spec map[string]any) error {
	t.Helper()
	t.Cleanup(func() { forceDelete(t, name) })
	_, err := kubectl(t, teamSpace(name, spec), append(who, "create", "-f", "-")...)
	return err
}

// forceDelete deletes a TeamSpace and drops its finalizers (no engine runs
// here to finalize it).
func forceDelete(t *testing.T, name string) {
	_, _ = kubectl(t, "", "patch", "teamspace", name, "--type=json", "-p", `[{"op":"remove","path":"/metadata/finalizers"}]`)
	_, _ = kubectl(t, "", "delete", "teamspace", name, "--ignore-not-found", "--wait=false")
}

// wantLimitRefusal checks that err is the limits policy's one-line refusal
// and says every part of want.
func wantLimitRefusal(t *testing.T, what string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want refused by %s", what, limitsPolicy)
		return
	}
	msg := strings.TrimSpace(err.Error())
	if !strings.Contains(msg, "ValidatingAdmissionPolicy '"+limitsPolicy+"'") {
		t.Errorf("%s: refused, but not by %s: %v", what, limitsPolicy, msg)
	}
	if strings.Contains(msg, "\n") {
		t.Errorf("%s: the refusal is not one line: %q", what, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message lacks %q: %s", what, w, msg)
		}
	}
}

// limitsCast installs the limits and binds, for the test, a requester
// named prefix-<suffix> (teamspace-requester) and platformGroup
// (teamspace-edit and teamspace-view); it returns the suffix and the
// requester.
func limitsCast(t *testing.T, prefix string) (s, user string) {
	t.Helper()
	installLimits(t)
	s = suffix(t, 6)
	user = prefix + "-" + s
	bindRole(t, "teamspace-requester", "User", user)
	bindRole(t, "teamspace-edit", "Group", platformGroup)
	bindRole(t, "teamspace-view", "Group", platformGroup)
	return s, user
}

// aboveAll is a spec above every shipped limit: only an exempt user gets it.
func aboveAll() map[string]any {
	return map[string]any{"pods": 50, "cpu": "100000", "memory": "100Ti", "podSecurity": "privileged", "networkIsolation": false}
}

// within is a spec a requester may have under the shipped limits: every
// field a maximum bounds is set (as without the defaults of
// requested-by.yaml, on Kubernetes 1.35, a requester must).
func within() map[string]any {
	return map[string]any{"pods": 2, "cpu": "500m", "memory": "1Gi", "ephemeralStorage": "1Gi", "objects": shippedDefaultObjects}
}

// atTheLimits is a spec at every shipped maximum.
func atTheLimits() map[string]any {
	return map[string]any{"pods": 10, "cpu": "4", "memory": "8Gi", "ephemeralStorage": "20Gi", "objects": shippedMaxObjects}
}

func with(spec map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range spec {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// TestLimitsRequester: a user bound only to teamspace-requester gets what
// the shipped limits allow and nothing more; each refusal names the field,
// the value, the limit and who can grant more. Quantities are compared as
// quantities ("4000m" is "4"; "8192Mi" is "8Gi").
func TestLimitsRequester(t *testing.T) {
	parallel(t)
	installLimits(t)
	s := suffix(t, 6)
	user := "requester-" + s
	bindRole(t, "teamspace-requester", "User", user)
	req := as(user)
	grant := "only the platform team (group system:masters or " + platformGroup + ")"

	refused := []struct {
		name string
		spec map[string]any
		want []string
	}{
		{"privileged", with(within(), "podSecurity", "privileged", "owners", []any{map[string]any{"kind": "User", "name": user}}),
			[]string{`spec.podSecurity: "privileged" is not allowed`, "the platform allows baseline, restricted", "key podSecurityLevels of " + limitsSource, grant}},
		{"pods", with(within(), "pods", 11),
			[]string{"spec.pods: 11 is above the platform limit of 10", "key maxPods of " + limitsSource, grant}},
		{"cpu", with(within(), "cpu", "100000"),
			[]string{`spec.cpu: "100000" is above the platform limit of "4"`, "key maxCPU of " + limitsSource, grant}},
		{"cpu-by-a-milli", with(within(), "cpu", "4001m"), []string{`spec.cpu: "4001m"`}},
		{"memory", with(within(), "memory", "100Ti"),
			[]string{`spec.memory: "100Ti" is above the platform limit of "8Gi"`, "key maxMemory of " + limitsSource, grant}},
		{"memory-by-a-mebibyte", with(within(), "memory", "8193Mi"), []string{`spec.memory: "8193Mi"`}},
		{"isolation-off", with(within(), "networkIsolation", false),
			[]string{"spec.networkIsolation: false is not allowed", "key allowNetworkIsolationOff of " + limitsSource, grant}},
		{"all-at-once", map[string]any{"pods": 50, "cpu": "100000", "memory": "100Ti", "podSecurity": "privileged", "networkIsolation": false},
			[]string{"spec.pods: 50"}},
	}
	for _, c := range refused {
		t.Run("refused/"+c.name, func(t *testing.T) {
			name := "lim-" + c.name + "-" + s
			wantLimitRefusal(t, c.name, createAs(t, req, name, c.spec), c.want...)
			if _, found := getObject(t, "teamspace", name); found {
				t.Errorf("a refused TeamSpace %s exists", name)
			}
		})
	}
	admitted := []struct {
		name string
		spec map[string]any
	}{
		{"within", within()},
		{"at-the-limits", with(atTheLimits(), "podSecurity", "restricted", "networkIsolation", true)},
		{"same-quantities-spelled-otherwise", with(atTheLimits(), "cpu", "4000m", "memory", "8192Mi", "ephemeralStorage", "20480Mi")},
		{"defaults", with(within(), "pods", 1, "cpu", nil, "memory", "512Mi")},
	}
	for _, c := range admitted {
		t.Run("admitted/"+c.name, func(t *testing.T) {
			if err := createAs(t, req, "lim-"+c.name+"-"+s, c.spec); err != nil {
				t.Errorf("refused, want admitted: %v", err)
			}
		})
	}

	// The requester has no update: the limits cannot be walked around by
	// creating small and growing later.
	t.Run("no-growing-later", func(t *testing.T) {
		name := "lim-grow-" + s
		if err := createAs(t, req, name, within()); err != nil {
			t.Fatal(err)
		}
		_, err := kubectl(t, "", append(req, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"pods":50}}`)...)
		if err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("requester patching spec.pods: %v, want forbidden by RBAC", err)
		}
	})
}

// TestLimitsSpelledAsADecimal: "1.5" and "1500m" are the same quantity also
// as a limit (maxCPU "1.5").
func TestLimitsSpelledAsADecimal(t *testing.T) {
	alone(t, changesLimits)
	installLimits(t)
	s := suffix(t, 6)
	user := "requester-" + s
	bindRole(t, "teamspace-requester", "User", user)
	req := as(user)
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "maxCPU", "1.5")
	settled(t, with(within(), "cpu", "1501m"), `limit of "1.5"`)
	if err := createAs(t, req, "lim-dec-ok-"+s, with(within(), "cpu", "1500m")); err != nil {
		t.Errorf("cpu 1500m under maxCPU 1.5: refused: %v", err)
	}
	wantLimitRefusal(t, "cpu 1501m under maxCPU 1.5", createAs(t, req, "lim-dec-no-"+s, with(within(), "cpu", "1501m")),
		`spec.cpu: "1501m" is above the platform limit of "1.5"`)
}

// TestLimitsExemptAndEngine: a member of an exempt group (and
// system:masters) gets a privileged TeamSpace above every limit; the
// engine's identity then adds its finalizer and writes status unhindered; a
// non-exempt editor may write its metadata and change a spec field within
// the limits, but not raise one above them.
func TestLimitsExemptAndEngine(t *testing.T) {
	parallel(t)
	installLimits(t)
	s := suffix(t, 6)
	platform := as("platform-"+s, platformGroup)
	bindRole(t, "teamspace-edit", "Group", platformGroup)
	bindRole(t, "teamspace-view", "Group", platformGroup)
	editor := "editor-" + s
	bindRole(t, "teamspace-edit", "User", editor)
	bindRole(t, "teamspace-view", "User", editor)

	big := aboveAll()
	name := "lim-exempt-" + s
	if err := createAs(t, platform, name, big); err != nil {
		t.Fatalf("exempt group %s: privileged TeamSpace above the limits refused: %v", platformGroup, err)
	}
	if err := createAs(t, nil, "lim-masters-"+s, big); err != nil {
		t.Errorf("system:masters: privileged TeamSpace above the limits refused: %v", err)
	}

	t.Run("engine adds its finalizer and writes status", func(t *testing.T) {
		engineWrites(t, name)
	})

	ed := as(editor)
	t.Run("editor writes metadata", func(t *testing.T) {
		_, err := kubectl(t, "", append(ed, "label", "teamspace", name, "team=a")...)
		wantAccepted(t, "label", err)
		_, err = kubectl(t, "", append(ed, "annotate", "teamspace", name, "note=x")...)
		wantAccepted(t, "annotate", err)
	})
	t.Run("editor changes one field within the limits", func(t *testing.T) {
		_, err := kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"pods":5}}`)...)
		wantAccepted(t, "pods 50 -> 5 on a privileged TeamSpace (podSecurity, cpu, memory unchanged)", err)
	})
	t.Run("editor raises a field above the limits", func(t *testing.T) {
		_, err := kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"pods":12}}`)...)
		wantLimitRefusal(t, "pods 5 -> 12", err, "spec.pods: 12 is above the platform limit of 10")
		_, err = kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"memory":"200Ti"}}`)...)
		wantLimitRefusal(t, "memory 100Ti -> 200Ti", err, `spec.memory: "200Ti"`)
		_, err = kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=json", "-p", `[{"op":"remove","path":"/spec/memory"}]`)...)
		wantLimitRefusal(t, "memory removed", err, "spec.memory: unset")
		obj, _ := getObject(t, "teamspace", name)
		if got := field(obj, "spec"); str(field(obj, "spec", "pods")) != "5" || str(field(obj, "spec", "memory")) != "100Ti" {
			t.Errorf("refused updates changed the TeamSpace: spec %v", got)
		}
	})
	t.Run("editor lowers podSecurity to one that is allowed", func(t *testing.T) {
		_, err := kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"podSecurity":"baseline"}}`)...)
		wantAccepted(t, "privileged -> baseline", err)
		_, err = kubectl(t, "", append(ed, "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"podSecurity":"privileged"}}`)...)
		wantLimitRefusal(t, "baseline -> privileged", err, `spec.podSecurity: "privileged" is not allowed`)
	})
}

// engineWrites does, as the engine's identity (rbac.yaml's ServiceAccount,
// impersonated), what Metacontroller does to a TeamSpace: a PUT that adds
// its finalizer and a PUT of the status subresource.
func engineWrites(t *testing.T, name string) {
	t.Helper()
	obj, found := getObject(t, "teamspace", name)
	if !found {
		t.Fatalf("TeamSpace %s not found", name)
	}
	meta := obj["metadata"].(map[string]any)
	meta["finalizers"] = []any{testFinalizer}
	b, _ := json.Marshal(obj)
	_, err := kubectl(t, string(b), "--as="+engineIdentity, "replace", "-f", "-")
	wantAccepted(t, "the engine adds its finalizer", err)
	obj, _ = getObject(t, "teamspace", name)
	obj["status"] = map[string]any{"namespace": "team-" + name, "observedGeneration": field(obj, "metadata", "generation")}
	b, _ = json.Marshal(obj)
	_, err = kubectl(t, string(b), "--as="+engineIdentity, "replace", "--subresource=status", "-f", "-")
	wantAccepted(t, "the engine writes status", err)
	obj, _ = getObject(t, "teamspace", name)
	if fs, _ := field(obj, "metadata", "finalizers").([]any); len(fs) != 1 || str(field(obj, "status", "namespace")) != "team-"+name {
		t.Errorf("after the engine's writes: finalizers %v, status %v", field(obj, "metadata", "finalizers"), field(obj, "status"))
	}
}

// TestLimitsEscalation is the attack the limits close, end to end: the
// hook's answer for a TeamSpace is applied as the engine applies it (as the
// engine's identity), and its owner then asks for a pod with privileged:
// true, hostPID and the node's / mounted.
//
//   - The control: an exempt user's privileged TeamSpace owned by the
//     requester: the pod is admitted. This API server allows privileged
//     pods (as k3s does), so only Pod Security and the limits stand between
//     a requester and the node.
//   - The attack: the requester's own privileged TeamSpace is refused, and
//     in the TeamSpace the requester may have (baseline) the same pod is
//     refused by Pod Security.
func TestLimitsEscalation(t *testing.T) {
	parallel(t)
	s, user := limitsCast(t, "attacker")
	owners := []any{map[string]any{"kind": "User", "name": user}}

	control := "lim-ctl-" + s
	if err := createAs(t, as("platform-"+s, platformGroup), control, map[string]any{"pods": 3, "memory": "1Gi", "podSecurity": "privileged", "owners": owners}); err != nil {
		t.Fatalf("exempt user's privileged TeamSpace: %v", err)
	}
	engineStandIn(t, control)
	_, err := kubectl(t, rootPod("team-"+control), append(as(user), "create", "-f", "-")...)
	if err != nil {
		t.Fatalf("control: the owner's privileged pod in a privileged namespace was refused (%v): this API server would refuse the attack by itself, so the test below would prove nothing", err)
	}

	attack := "lim-atk-" + s
	wantLimitRefusal(t, "requester's privileged TeamSpace", createAs(t, as(user), attack, with(within(), "pods", 3, "podSecurity", "privileged", "owners", owners)),
		`spec.podSecurity: "privileged" is not allowed`)
	if _, found := getObject(t, "namespace", "team-"+attack); found {
		t.Errorf("namespace team-%s exists after the refusal", attack)
	}

	own := "lim-own-" + s
	if err := createAs(t, as(user), own, with(within(), "pods", 3, "owners", owners)); err != nil {
		t.Fatalf("requester's baseline TeamSpace: %v", err)
	}
	engineStandIn(t, own)
	_, err = kubectl(t, rootPod("team-"+own), append(as(user), "create", "-f", "-")...)
	if err == nil || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
		t.Errorf("the requester's root pod in its own TeamSpace: %v, want refused by PodSecurity baseline", err)
	}
}

// rootPod is what "root on every node" takes: privileged, the host's PID
// namespace and its / mounted.
func rootPod(ns string) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "root", "namespace": ns},
		"spec": map[string]any{
			"hostPID": true,
			"containers": []any{map[string]any{
				"name": "c", "image": "registry.invalid/none:1",
				"securityContext": map[string]any{"privileged": true},
				"resources":       map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
				"volumeMounts":    []any{map[string]any{"name": "host", "mountPath": "/host"}},
			}},
			"volumes": []any{map[string]any{"name": "host", "hostPath": map[string]any{"path": "/"}}},
		},
	})
	return string(b)
}

// engineStandIn does what the engine would for a TeamSpace, with the hook's
// own answer: sync without a namespace (the answer is the namespace), apply
// it, sync again with the namespace observed (the answer is every child),
// apply those; every write as the engine's identity. It waits for the
// namespace's default ServiceAccount (pods need it) and deletes the
// namespace when the test ends. Through client-go, not kubectl: dozens of
// tests call it, and its ~20 requests as kubectl processes were a sixth
// of the package's CPU on two cores (#74).
func engineStandIn(t *testing.T, name string) {
	t.Helper()
	api := liveClient(t)
	ns := teamspace.NamespaceName(name)
	t.Cleanup(func() {
		_ = api.delete(liveRef{apiVersion: "v1", kind: "Namespace", name: ns})
		items, _ := api.list("v1", "Namespace", "", v1alpha1.TeamSpaceLabel+"="+name)
		for _, item := range items {
			_ = api.delete(refOf(&item))
		}
	})
	for round := 0; round < 2; round++ {
		parent, err := api.get(liveRef{apiVersion: v1alpha1.APIVersion, kind: v1alpha1.Kind, name: name})
		if err != nil {
			t.Fatalf("TeamSpace %s: %v", name, err)
		}
		children := map[string]any{}
		// Every namespace of the team (spec.namespaces' too), as the
		// engine shows its children: by the TeamSpace label.
		if items, err := api.list("v1", "Namespace", "", v1alpha1.TeamSpaceLabel+"="+name); err == nil {
			namespaces := map[string]json.RawMessage{}
			for _, item := range items {
				if n := item.GetName(); n == ns || strings.HasPrefix(n, ns+"--") {
					namespaces[n] = rawJSON(&item)
				}
			}
			if len(namespaces) > 0 {
				children["Namespace.v1"] = namespaces
			}
		}
		// The owners' binding waits for their role among the children, as
		// the engine shows it: only one it made (here: one with the
		// TeamSpace label the hook gives every child).
		role := teamspace.OwnerAccessName(name)
		if obj, err := api.get(liveRef{apiVersion: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", name: role}); err == nil && obj.GetLabels()[v1alpha1.TeamSpaceLabel] == name {
			children["ClusterRole.rbac.authorization.k8s.io/v1"] = map[string]json.RawMessage{role: rawJSON(obj)}
		}
		// The limits ConfigMap, as customize asks for it: a requester's
		// TeamSpace gets nothing new without it (its allowance).
		related := map[string]any{}
		if obj, err := api.get(liveRef{apiVersion: "v1", kind: "ConfigMap", namespace: limitsNamespace, name: limitsConfigMap}); err == nil {
			related["ConfigMap.v1"] = map[string]json.RawMessage{limitsNamespace + "/" + limitsConfigMap: rawJSON(obj)}
		}
		// The namespaces it adopts, as customize asks for them by name
		// (here: by the label that confirms them).
		if items, err := api.list("v1", "Namespace", "", v1alpha1.AdoptLabel+"="+name); err == nil {
			adopted := map[string]json.RawMessage{}
			for _, item := range items {
				adopted[item.GetName()] = rawJSON(&item)
			}
			if len(adopted) > 0 {
				related["Namespace.v1"] = adopted
			}
		}
		body, _ := json.Marshal(map[string]any{"parent": rawJSON(parent), "children": children, "related": related})
		var r teamspace.Request
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("the hook refuses the request: %v", err)
		}
		applyAsEngine(t, teamspace.Sync(&r).Children)
		quotasStandIn(t, name)
		adoptedStandIn(t, name, r.Parent)
	}
	items, err := api.list("v1", "Namespace", "", v1alpha1.TeamSpaceLabel+"="+name)
	if err != nil {
		t.Fatal(err)
	}
	namespaces := []string{ns}
	for _, item := range items {
		namespaces = append(namespaces, item.GetName())
	}
	for _, n := range namespaces {
		if !eventually(60*time.Second, 250*time.Millisecond, func() bool {
			_, err := api.get(liveRef{apiVersion: "v1", kind: "ServiceAccount", namespace: n, name: "default"})
			return err == nil
		}) {
			t.Fatalf("no ServiceAccount default in %s after 60s", n)
		}
	}
}

// asEngine is the client acting as the engine's identity.
func asEngine(t *testing.T) *live {
	t.Helper()
	return actingAs(t, as(engineIdentity))
}

// adoptedStandIn is the adopted namespaces' DecoratorController of
// engineStandIn: for each namespace labelled to be adopted by TeamSpace
// name, the labels and annotations teamspace.Adopted answers, written as
// the engine.
func adoptedStandIn(t *testing.T, name string, parent *teamspace.Parent) {
	t.Helper()
	items, err := liveClient(t).list("v1", "Namespace", "", v1alpha1.AdoptLabel+"="+name)
	if err != nil {
		return
	}
	ts := &teamspace.Object{APIVersion: parent.APIVersion, Kind: parent.Kind, Metadata: parent.Metadata, Spec: parent.Spec}
	for _, item := range items {
		var ns teamspace.Object
		if err := json.Unmarshal(rawJSON(&item), &ns); err != nil {
			t.Fatal(err)
		}
		req := &teamspace.AdoptedRequest{Object: &ns, Related: map[string]teamspace.ObjectMap{v1alpha1.Kind + "." + v1alpha1.APIVersion: {name: ts}}}
		if err := req.Validate(); err != nil {
			t.Fatalf("the hook refuses namespace %s: %v", ns.Metadata.Name, err)
		}
		resp := teamspace.Adopted(req)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": resp.Labels, "annotations": resp.Annotations}})
		if err := asEngine(t).mergePatch(refOf(&item), patch); err != nil {
			t.Fatalf("writing the labels of adopted namespace %s as the engine: %v", ns.Metadata.Name, err)
		}
	}
}

// applyAsEngine applies what the hook answered as the engine would: each
// object, as the engine's identity.
func applyAsEngine(t *testing.T, objs []map[string]any) {
	t.Helper()
	engine := asEngine(t)
	for _, o := range objs {
		if err := engine.apply(o, "engine-stand-in"); err != nil {
			b, _ := json.Marshal(o)
			t.Fatalf("applying %s as the engine: %v", b, err)
		}
	}
}

// quotasStandIn is the quotas' DecoratorController of engineStandIn: for
// each namespace of TeamSpace name whose LimitRange asks for quotas, the
// quotas teamspace.Quotas answers, applied as the engine, and its report
// written on the LimitRange.
func quotasStandIn(t *testing.T, name string) {
	t.Helper()
	api := liveClient(t)
	items, err := api.list("v1", "LimitRange", "", v1alpha1.TeamSpaceLabel+"="+name)
	if err != nil {
		return
	}
	for _, item := range items {
		var lr teamspace.Object
		if json.Unmarshal(rawJSON(&item), &lr) != nil || lr.Metadata.Name != teamspace.LimitRangeName || lr.Metadata.Annotations[v1alpha1.QuotasAnnotation] == "" {
			continue
		}
		ns := lr.Metadata.Namespace
		attachments := teamspace.ObjectMap{}
		for _, q := range []string{teamspace.QuotaName, teamspace.ObjectsQuotaName} {
			if obj, err := api.get(liveRef{apiVersion: "v1", kind: "ResourceQuota", namespace: ns, name: q}); err == nil {
				var o teamspace.Object
				if json.Unmarshal(rawJSON(obj), &o) == nil {
					attachments[ns+"/"+q] = &o
				}
			}
		}
		req := &teamspace.QuotasRequest{Object: &lr, Attachments: map[string]teamspace.ObjectMap{"ResourceQuota.v1": attachments}}
		if err := req.Validate(); err != nil {
			t.Fatalf("the hook refuses LimitRange %s/%s: %v", ns, lr.Metadata.Name, err)
		}
		resp, err := teamspace.Quotas(req)
		if err != nil {
			t.Fatalf("the hook refuses LimitRange %s/%s: %v", ns, lr.Metadata.Name, err)
		}
		applyAsEngine(t, resp.Attachments)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": resp.Annotations}})
		if err := asEngine(t).mergePatch(refOf(&item), patch); err != nil {
			t.Fatalf("writing the quotas' report on %s/%s as the engine: %v", ns, lr.Metadata.Name, err)
		}
	}
}

// TestLimitsConfigBroken: the ConfigMap holding a value that is not what its
// key wants refuses the requester with a message naming the object and the
// key (never lets everything through); exempt users and the engine go on.
// The ConfigMap deleted: every new TeamSpace is refused (the API server
// resolves parameters before any expression, so it cannot tell users apart
// then), updates and the engine's writes go on.
func TestLimitsConfigBroken(t *testing.T) {
	alone(t, changesLimits)
	s, user := limitsCast(t, "requester")
	req, platform := as(user), as("platform-"+s, platformGroup)
	big := aboveAll()

	// An exempt user's TeamSpace made before the breakage, for the engine.
	existing := "lim-pre-" + s
	if err := createAs(t, platform, existing, big); err != nil {
		t.Fatal(err)
	}
	broken := []struct{ key, value, want string }{
		{"maxPods", "ten", `key maxPods is "ten", not a whole number`},
		{"maxPods", "", `key maxPods is "", not a whole number`},
		{"maxCPU", "lots", `key maxCPU is "lots", not a quantity`},
		{"maxMemory", "8 GB", `key maxMemory is "8 GB", not a quantity`},
		{"podSecurityLevels", "baseline,root", `key podSecurityLevels is "baseline,root", not a comma-separated list of privileged, baseline, restricted`},
		{"podSecurityLevels", "", `key podSecurityLevels is ""`},
		{"allowNetworkIsolationOff", "yes", `key allowNetworkIsolationOff is "yes", not "true" or "false"`},
		// A requester's allowance (optional keys: empty bounds nothing).
		{"maxTeamSpacesPerRequester", "-1", `key maxTeamSpacesPerRequester is "-1", not a whole number`},
		{"maxPodsPerRequester", "ten", `key maxPodsPerRequester is "ten", not a whole number`},
		{"maxCPUPerRequester", "lots", `key maxCPUPerRequester is "lots", not a quantity`},
		{"maxMemoryPerRequester", "16 GB", `key maxMemoryPerRequester is "16 GB", not a quantity`},
		// Ephemeral storage and object counts (optional keys).
		{"defaultEphemeralStorage", "lots", `key defaultEphemeralStorage is "lots", not a quantity`},
		{"maxEphemeralStorage", "20 GB", `key maxEphemeralStorage is "20 GB", not a quantity`},
		{"defaultObjects", "secrets=ten", `key defaultObjects is "secrets=ten", not a comma-separated list of <kind>=<count> of configmaps,`},
		{"maxObjects", "secrets=20,deployments=3", `key maxObjects is "secrets=20,deployments=3", not a comma-separated list`},
	}
	for i, c := range broken {
		t.Run(fmt.Sprintf("%s=%q", c.key, c.value), func(t *testing.T) {
			t.Cleanup(func() { resetLimitsConfig(t) })
			setLimit(t, c.key, c.value)
			settled(t, within(), c.want)
			wantLimitRefusal(t, "requester within the limits", createAs(t, req, fmt.Sprintf("lim-brk%d-%s", i, s), within()),
				limitsSource+": "+c.want, "until the platform team fixes it")
			if err := createAs(t, platform, fmt.Sprintf("lim-brk%d-x-%s", i, s), big); err != nil {
				t.Errorf("exempt user refused: %v", err)
			}
			_, err := kubectl(t, "", "label", "--overwrite", "teamspace", existing, fmt.Sprintf("round=%d", i))
			wantAccepted(t, "a metadata write", err)
		})
	}
	// A key TeamSpace does not know is a typo until said otherwise: the
	// limit meant is not applied.
	t.Run("unknown key", func(t *testing.T) {
		t.Cleanup(func() {
			mustKubectl(t, "", "-n", limitsNamespace, "patch", "configmap", limitsConfigMap, "--type=json", "-p", `[{"op":"remove","path":"/data/maxPod"}]`)
			resetLimitsConfig(t)
		})
		setLimit(t, "maxPod", "3")
		settled(t, within(), "key maxPod is not one TeamSpace knows")
		wantLimitRefusal(t, "requester", createAs(t, req, "lim-unknown-"+s, within()), limitsSource+": key maxPod is not one TeamSpace knows (maxPods, ")
		if err := createAs(t, platform, "lim-unknown-x-"+s, big); err != nil {
			t.Errorf("exempt user refused: %v", err)
		}
	})
	// A key removed is as broken as a bad value.
	t.Run("key missing", func(t *testing.T) {
		t.Cleanup(func() { resetLimitsConfig(t) })
		mustKubectl(t, "", "-n", limitsNamespace, "patch", "configmap", limitsConfigMap, "--type=json", "-p", `[{"op":"remove","path":"/data/maxCPU"}]`)
		settled(t, within(), `key maxCPU is ""`)
		wantLimitRefusal(t, "requester", createAs(t, req, "lim-nokey-"+s, within()), limitsSource+`: key maxCPU is "", not a quantity`)
	})
	t.Run("engine writes while broken", func(t *testing.T) {
		t.Cleanup(func() { resetLimitsConfig(t) })
		setLimit(t, "maxCPU", "lots")
		settled(t, within(), `key maxCPU is "lots"`)
		engineWrites(t, existing)
	})

	t.Run("ConfigMap deleted", func(t *testing.T) {
		t.Cleanup(func() { resetLimitsConfig(t) })
		mustKubectl(t, "", "delete", "-f", deployFile(t, "limits-config.yaml"))
		settled(t, within(), "no params found")
		wantLimitRefusal(t, "requester", createAs(t, req, "lim-gone-"+s, within()),
			"binding 'requires-configmap.teamspace-system.teamspace-limits'", "no params found")
		_, err := kubectl(t, "", append(platform, "label", "--overwrite", "teamspace", existing, "round=gone")...)
		wantAccepted(t, "exempt user's metadata write", err)
		_, err = kubectl(t, "", append(platform, "patch", "teamspace", existing, "--type=merge", "-p", `{"spec":{"pods":7}}`)...)
		wantAccepted(t, "exempt user's spec update", err)
		// Fail closed on create, for everyone: documented in limits.yaml.
		wantLimitRefusal(t, "exempt user's create", createAs(t, platform, "lim-gone-x-"+s, big), "no params found")
		mustKubectl(t, "", "delete", "teamspace", existing, "--wait=false")
		obj, _ := getObject(t, "teamspace", existing)
		meta := obj["metadata"].(map[string]any)
		meta["finalizers"] = []any{}
		b, _ := json.Marshal(obj)
		_, err = kubectl(t, string(b), "--as="+engineIdentity, "replace", "-f", "-")
		wantAccepted(t, "the engine removes its finalizer while the ConfigMap is gone", err)
		if !eventually(10*time.Second, 200*time.Millisecond, func() bool {
			_, found := getObject(t, "teamspace", existing)
			return !found
		}) {
			t.Errorf("%s is still there after the engine removed its finalizer", existing)
		}
	})
}

// withNamespaces is spec (within the shipped limits) with n entries of
// spec.namespaces, each 1 pod and 10m of cpu.
func withNamespaces(spec map[string]any, n int) map[string]any {
	var entries []any
	for i := range n {
		entries = append(entries, map[string]any{"name": fmt.Sprintf("ns%d", i), "pods": 1, "cpu": "10m"})
	}
	return with(spec, "pods", 10, "cpu", "1", "namespaces", entries)
}

// TestMaxNamespaces (issue #52, item 4): with the shipped maxNamespaces of
// 3 a requester's TeamSpace may ask for three namespaces besides
// team-<name>, not four, refused naming the field, the limit and the key;
// an exempt user is not held.
func TestMaxNamespaces(t *testing.T) {
	parallel(t)
	s, user := limitsCast(t, "nss")
	create := func(who []string, spec map[string]any) error {
		_, err := kubectl(t, teamSpace("nss-probe-"+s, spec), append(who, "create", "--dry-run=server", "-f", "-")...)
		return err
	}
	wantAccepted(t, "a requester's TeamSpace with 3 namespaces", create(as(user), withNamespaces(within(), 3)))
	wantLimitRefusal(t, "a requester's TeamSpace with 4 namespaces", create(as(user), withNamespaces(within(), 4)),
		"spec.namespaces: 4 namespaces besides team-nss-probe-"+s+" are above the platform limit of 3 (key maxNamespaces of "+limitsSource+")")
	wantAccepted(t, "an exempt user's TeamSpace with 4 namespaces", create(as("platform-"+s, platformGroup), withNamespaces(within(), 4)))
}

// TestMaxNamespacesOptions: maxNamespaces empty bounds nothing but the
// schema's 10; a value that is not a whole number refuses a requester,
// naming the key.
func TestMaxNamespacesOptions(t *testing.T) {
	alone(t, changesLimits)
	s, user := limitsCast(t, "nso")
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "maxNamespaces", "")
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		_, err = kubectl(t, teamSpace("nso-probe-"+s, withNamespaces(within(), 5)), append(as(user), "create", "--dry-run=server", "-f", "-")...)
		return err == nil
	}) {
		t.Errorf("maxNamespaces empty: a requester's TeamSpace with 5 namespaces: %v; want admitted", err)
	}
	setLimit(t, "maxNamespaces", "three")
	settled(t, within(), `key maxNamespaces is "three", not a whole number`)
}
