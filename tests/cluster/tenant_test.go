package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/hook/teamspace"
)

// TestDayOne proves on the real API server what a team gets on day one,
// without the engine: the hook's golden answer for a steady TeamSpace with
// every child (sync/recorded-delta-steady: pods 3, cpu 500m, memory 1Gi,
// owners ann, delta-devs and ServiceAccount tools/ci) is applied as the
// engine would apply it, under a namespace name of its own, and then, acting
// as the owner ann and as a stranger (impersonation, kubectl --as):
//
//  1. a pod without requests is admitted with the LimitRange's default
//     request;
//  2. a privileged pod is refused by Pod Security baseline;
//  3. a user who is not an owner cannot create pods;
//  4. default-sized pod number pods+1 is refused by the quota.
//
// The cluster has no scheduler or kubelet: pods are only admitted, which is
// all these need. Evidence is written as JSON to $TEAMSPACE_DAYONE_OUT
// (default: a temporary directory, logged).
func TestDayOne(t *testing.T) {
	parallel(t)
	raw, err := os.ReadFile(filepath.Join(repoRoot(t), "tests", "testdata", "sync", "recorded-delta-steady", "response.json"))
	if err != nil {
		t.Fatal(err)
	}
	ns := "team-d1" + suffix(t, 6)
	body := strings.ReplaceAll(string(raw), "team-delta", ns)
	var answer struct {
		Children []map[string]any `json:"children"`
	}
	if err := json.Unmarshal([]byte(body), &answer); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]map[string]any{}
	for _, c := range answer.Children {
		kinds[str(c["kind"])] = c
	}
	for _, k := range []string{"Namespace", "ResourceQuota", "LimitRange", "RoleBinding", "NetworkPolicy"} {
		if kinds[k] == nil {
			t.Fatalf("golden answer has no %s", k)
		}
	}
	t.Cleanup(func() {
		if _, err := kubectl(t, "", "delete", "namespace", ns, "--ignore-not-found", "--wait=false"); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
	for _, k := range []string{"Namespace", "ResourceQuota", "LimitRange", "RoleBinding", "NetworkPolicy"} {
		b, _ := json.Marshal(kinds[k])
		mustKubectl(t, string(b), "create", "-f", "-")
	}
	// Pods need the namespace's default ServiceAccount (made by the
	// controller manager) to be admitted.
	if !eventually(60*time.Second, 250*time.Millisecond, func() bool {
		_, err := kubectl(t, "", "get", "serviceaccount", "default", "-n", ns)
		return err == nil
	}) {
		t.Fatalf("no ServiceAccount default in %s after 60s", ns)
	}

	hard := field(kinds["ResourceQuota"], "spec", "hard").(map[string]any)
	limits := field(kinds["LimitRange"], "spec", "limits").([]any)
	defaults := limits[0].(map[string]any)["defaultRequest"].(map[string]any)
	owner := "--as=ann"
	pod := func(name string, securityContext map[string]any) string {
		c := map[string]any{"name": "c", "image": "registry.invalid/none:1"}
		if securityContext != nil {
			c["securityContext"] = securityContext
		}
		b, _ := json.Marshal(map[string]any{
			"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": ns},
			"spec":     map[string]any{"containers": []any{c}},
		})
		return string(b)
	}
	evidence := map[string]any{"namespace": ns, "quota": hard, "defaultRequest": defaults, "podSecurity": field(kinds["Namespace"], "metadata", "labels")}

	t.Run("owner's pod without requests gets the default request", func(t *testing.T) {
		mustKubectl(t, pod("p1", nil), owner, "create", "-f", "-")
		got, _ := getObject(t, "pod", "p1", "-n", ns)
		req, _ := field(got, "spec").(map[string]any)["containers"].([]any)[0].(map[string]any)["resources"].(map[string]any)["requests"].(map[string]any)
		evidence["podWithoutRequests"] = map[string]any{"admitted": true, "requests": req}
		for k, v := range defaults {
			if str(req[k]) != str(v) {
				t.Errorf("requests.%s = %v, want the default %v", k, req[k], v)
			}
		}
	})
	// The test control plane allows privileged pods (--allow-privileged=true,
	// as k3s): Pod Security baseline is what refuses them here, as it does
	// a pod adding CAP_SYS_ADMIN.
	t.Run("privileged pod refused under baseline", func(t *testing.T) {
		_, err := kubectl(t, pod("priv", map[string]any{"privileged": true}), owner, "create", "-f", "-")
		_, psaErr := kubectl(t, pod("sysadmin", map[string]any{"capabilities": map[string]any{"add": []any{"SYS_ADMIN"}}}), owner, "create", "-f", "-")
		evidence["privilegedPod"] = map[string]any{"refused": err != nil, "error": errText(err)}
		evidence["sysAdminPod"] = map[string]any{"refused": psaErr != nil, "error": errText(psaErr)}
		if err == nil {
			t.Errorf("privileged pod admitted")
		} else if !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`) {
			t.Errorf("privileged pod: want refusal by PodSecurity baseline:latest, got %v", err)
		}
		if psaErr == nil || !strings.Contains(psaErr.Error(), `violates PodSecurity "baseline:latest"`) {
			t.Errorf("SYS_ADMIN pod: want refusal by PodSecurity baseline:latest, got %v", psaErr)
		}
	})
	t.Run("non-owner cannot create pods", func(t *testing.T) {
		_, err := kubectl(t, pod("stranger", nil), "--as=mallory", "create", "-f", "-")
		evidence["nonOwner"] = map[string]any{"refused": err != nil, "error": errText(err)}
		if err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("non-owner pod: want Forbidden, got %v", err)
		}
	})
	t.Run("pod number pods+1 refused by the quota", func(t *testing.T) {
		var pods int
		fmt.Sscan(str(hard["pods"]), &pods)
		created := []string{"p1"}
		for i := 2; i <= pods; i++ {
			name := fmt.Sprintf("p%d", i)
			mustKubectl(t, pod(name, nil), owner, "create", "-f", "-")
			created = append(created, name)
		}
		name := fmt.Sprintf("p%d", pods+1)
		_, err := kubectl(t, pod(name, nil), owner, "create", "-f", "-")
		used, _ := kubectl(t, "", "get", "resourcequota", "team-quota", "-n", ns, "-o", "jsonpath={.status.used}")
		evidence["quota"] = map[string]any{"hard": hard, "admitted": created, "refused": name, "error": errText(err), "usedAfter": json.RawMessage(orNull(used))}
		if err == nil || !strings.Contains(err.Error(), "exceeded quota: team-quota") {
			t.Errorf("pod %s: want refusal by quota team-quota, got %v", name, err)
		}
	})

	out := os.Getenv("TEAMSPACE_DAYONE_OUT")
	if out == "" {
		out = t.TempDir()
	}
	b, _ := json.MarshalIndent(evidence, "", "  ")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, "dayone.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("evidence: %s\n%s", filepath.Join(out, "dayone.json"), b)
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return strings.TrimSpace(err.Error())
}

func orNull(s string) string {
	if strings.TrimSpace(s) == "" {
		return "null"
	}
	return s
}

// ownedBy is spec with one owner, User owner.
func ownedBy(spec map[string]any, owner string) map[string]any {
	return with(spec, "owners", []any{map[string]any{"kind": "User", "name": owner}})
}

// dryRunCreate is a server-side dry run of creating manifest in namespace
// as who (as's flags; nil: the admin): kubectl -n namespace create
// --dry-run=server, through client-go (hundreds of them: #74).
func dryRunCreate(t *testing.T, who []string, namespace, manifest string) error {
	t.Helper()
	var obj map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &obj); err != nil {
		t.Fatalf("manifest: %v\n%s", err, manifest)
	}
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		obj["metadata"] = meta
	}
	if ns, _ := meta["namespace"].(string); ns != "" && ns != namespace {
		t.Fatalf("manifest of namespace %s created in %s", ns, namespace)
	}
	meta["namespace"] = namespace
	return actingAs(t, who).create(obj, true)
}

// actingAs is the client acting as who: as's flags, nil for the admin.
func actingAs(t *testing.T, who []string) *live {
	t.Helper()
	api := liveClient(t)
	if len(who) == 0 {
		return api
	}
	var user string
	var groups []string
	for _, a := range who {
		switch {
		case strings.HasPrefix(a, "--as="):
			user = strings.TrimPrefix(a, "--as=")
		case strings.HasPrefix(a, "--as-group="):
			groups = append(groups, strings.TrimPrefix(a, "--as-group="))
		default:
			t.Fatalf("acting as %v: %s is not --as or --as-group", who, a)
		}
	}
	c, err := api.as(user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tenantCast is what the tests of the tenant policies (namespaces.yaml)
// act with: TeamSpace prefix-<s> made by the engine's stand-in with owner
// owner-<s>, its namespace, a member of the platform team (exempt, edit
// cluster-wide) and a namespace that is no team's, where the owner is admin
// too.
type tenantCast struct {
	owner, ns, other string
	platform         []string
}

func newTenantCast(t *testing.T, prefix string) tenantCast {
	t.Helper()
	installOwnerAccess(t)
	s := suffix(t, 6)
	c := tenantCast{owner: "owner-" + s, other: "not-a-team-" + s, platform: as("platform-"+s, platformGroup)}
	name := prefix + "-" + s
	// Made by the platform, counting at the platform's maxima: node ports
	// and load balancers are then allowed by the policy's options alone.
	createOwned(t, name, ownedBy(with(within(), "objects", shippedMaxObjects), c.owner))
	c.ns = teamspace.NamespaceName(name)
	bindRole(t, "edit", "Group", platformGroup)
	mustKubectl(t, "", "create", "namespace", c.other)
	deleteOnCleanup(t, "namespace", c.other)
	mustKubectl(t, "", "create", "rolebinding", "owner", "--clusterrole=admin", "--user="+c.owner, "-n", c.other)
	return c
}
