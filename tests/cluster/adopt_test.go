package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/testenv"
)

// Adoption is the platform team's alone (hack/deploy/adopt.yaml), tried as
// an attacker would: impersonated users with more RBAC than any shipped
// role gives a tenant (every TeamSpace and namespace write, the status and
// finalize subresources), on the k3s-like API server of tests/controlplane.

const (
	adoptPolicy      = "teamspace-adopt"
	adoptLabelPolicy = "teamspace-adopt-label"
)

// installAdopt applies roles.yaml (ClusterRole teamspace-adopt) and
// adopt.yaml and waits until the API server enforces them. Like the other
// policies, they stay installed: only writes of the adopt entries and of
// the two namespace labels are judged, which no other test makes.
func installAdopt(t testing.TB) {
	t.Helper()
	installCRD(t)
	testenv.Setup(t, "adopt", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "roles.yaml"), "-f", deployFile(t, "adopt.yaml"))
		// A kube-* namespace labelled adopt: refused to everyone.
		probe := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"kube-adopt-probe","labels":{"` + v1alpha1.AdoptLabel + `":"x"}}}`
		if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
			_, err := kubectl(t, probe, "create", "--dry-run=server", "-f", "-")
			return err != nil && strings.Contains(err.Error(), adoptLabelPolicy)
		}) {
			t.Fatal("adopt.yaml is not enforced 30s after applying it")
		}
	})
}

// adoptCast binds, for the test, a tenant who may write every TeamSpace
// and namespace (and their subresources) and a platform user who may too
// and holds ClusterRole teamspace-adopt; it returns both.
func adoptCast(t *testing.T) (tenant, platform []string) {
	t.Helper()
	installAdopt(t)
	s := suffix(t, 6)
	role := "ts-test-adopt-writer-" + s
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": role},
		"rules": []any{
			map[string]any{"apiGroups": []string{"platform.labhub.io"}, "resources": []string{"teamspaces"}, "verbs": []string{"*"}},
			map[string]any{"apiGroups": []string{""}, "resources": []string{"namespaces", "namespaces/status", "namespaces/finalize"}, "verbs": []string{"*"}},
		},
	})
	mustKubectl(t, string(b), "apply", "-f", "-")
	deleteOnCleanup(t, "clusterrole", role)
	tenantUser, platformUser := "adopt-tenant-"+s, "adopt-platform-"+s
	bindRole(t, role, "User", tenantUser)
	bindRole(t, role, "User", platformUser)
	bindRole(t, "teamspace-adopt", "User", platformUser)
	return as(tenantUser), as(platformUser)
}

// wantAdoptRefusal checks that err is policy's refusal and says want.
func wantAdoptRefusal(t *testing.T, what, policy string, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want refused by %s", what, policy)
		return
	}
	msg := err.Error()
	if !strings.Contains(msg, "'"+policy+"'") {
		t.Errorf("%s: refused, but not by %s: %v", what, policy, msg)
	}
	for _, w := range want {
		if !strings.Contains(msg, w) {
			t.Errorf("%s: message lacks %q: %s", what, w, msg)
		}
	}
}

func adoptEntry(entry, ns string, enforce bool) map[string]any {
	adopt := map[string]any{"namespace": ns}
	if enforce {
		adopt["enforce"] = true
	}
	return map[string]any{"name": entry, "pods": 1, "cpu": "100m", "adopt": adopt}
}

// TestAdoptEntriesPlatformOnly: a tenant who may write TeamSpaces (a
// requester at create, an owner changing spec.namespaces) neither sets,
// changes nor removes an entry's adopt; other changes of such an entry
// (its share) stay theirs; the platform team does all of it.
func TestAdoptEntriesPlatformOnly(t *testing.T) {
	parallel(t)
	tenant, platform := adoptCast(t)
	s := suffix(t, 6)
	mine, theirs := "adopt-t-"+s, "adopt-p-"+s
	ns := "adopt-ns-" + s
	spec := func(entries ...any) map[string]any {
		return map[string]any{"pods": 4, "cpu": "1", "namespaces": entries}
	}

	err := createAs(t, tenant, mine, spec(adoptEntry("x", ns, false)))
	wantAdoptRefusal(t, "a tenant's create with adopt", adoptPolicy, err, "x="+ns, "platform team")
	if err := createAs(t, tenant, mine, spec(map[string]any{"name": "x", "pods": 1, "cpu": "100m"})); err != nil {
		t.Fatalf("a tenant's create without adopt: %v", err)
	}
	patch := func(who []string, name string, entries ...any) error {
		b, _ := json.Marshal(map[string]any{"spec": map[string]any{"namespaces": entries}})
		_, err := kubectl(t, "", append(who, "patch", "teamspace", name, "--type=merge", "-p", string(b))...)
		return err
	}
	wantAdoptRefusal(t, "a tenant adding adopt", adoptPolicy, patch(tenant, mine, adoptEntry("x", ns, false)), "x="+ns)

	if err := createAs(t, platform, theirs, spec(adoptEntry("x", ns, false))); err != nil {
		t.Fatalf("the platform team's create with adopt: %v", err)
	}
	wantAdoptRefusal(t, "a tenant raising enforce", adoptPolicy, patch(tenant, theirs, adoptEntry("x", ns, true)), "x="+ns+",enforce")
	wantAdoptRefusal(t, "a tenant pointing adopt elsewhere", adoptPolicy, patch(tenant, theirs, adoptEntry("x", "elsewhere-"+s, false)))
	wantAdoptRefusal(t, "a tenant removing the entry", adoptPolicy, patch(tenant, theirs))
	share := adoptEntry("x", ns, false)
	share["pods"] = 2
	if err := patch(tenant, theirs, share); err != nil {
		t.Errorf("a tenant moving an adopted entry's share: %v", err)
	}
	if err := patch(platform, theirs, adoptEntry("x", ns, true)); err != nil {
		t.Errorf("the platform team raising enforce: %v", err)
	}
	if err := patch(platform, theirs); err != nil {
		t.Errorf("the platform team releasing: %v", err)
	}
}

// TestAdoptLabelsPlatformOnly: the namespace labels that confirm an
// adoption (platform.labhub.io/adopt) and mark a team's namespace
// (platform.labhub.io/teamspace) are never a tenant's to set, change or
// remove, through the namespace or its subresources; never on a system
// namespace, adopt never on team-*; and adopt stays while the namespace is
// still adopted.
func TestAdoptLabelsPlatformOnly(t *testing.T) {
	parallel(t)
	tenant, platform := adoptCast(t)
	s := suffix(t, 6)
	ns := "adopt-labels-" + s
	mustKubectl(t, "", "create", "namespace", ns)
	deleteOnCleanup(t, "namespace", ns)
	label := func(who []string, name string, kv ...string) error {
		_, err := kubectl(t, "", append(append(who, "label", "--overwrite", "namespace", name), kv...)...)
		return err
	}
	labelOf := func(key string) (string, bool) {
		obj, _ := getObject(t, "namespace", ns)
		m, _ := field(obj, "metadata", "labels").(map[string]any)
		v, ok := m[key]
		return str(v), ok
	}
	adopt, team := v1alpha1.AdoptLabel, v1alpha1.TeamSpaceLabel

	wantAdoptRefusal(t, "a tenant confirming an adoption", adoptLabelPolicy, label(tenant, ns, adopt+"=mine"), "platform team")
	wantAdoptRefusal(t, "a tenant claiming a team's namespace", adoptLabelPolicy, label(tenant, ns, team+"=theirs"), "only the TeamSpace engine and the platform team")
	for _, sub := range []string{"status", "finalize"} {
		patch := `{"metadata":{"labels":{"` + adopt + `":"mine","` + team + `":"mine"}}}`
		_, err := kubectl(t, "", append(tenant, "patch", "namespace", ns, "--subresource="+sub, "--type=merge", "-p", patch)...)
		_, hasAdopt := labelOf(adopt)
		_, hasTeam := labelOf(team)
		if hasAdopt || hasTeam {
			t.Errorf("a tenant's patch of namespaces/%s set the labels (err %v)", sub, err)
		}
	}
	if _, err := kubectl(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"adopt-new-`+s+`","labels":{"`+team+`":"theirs"}}}`,
		append(tenant, "create", "--dry-run=server", "-f", "-")...); err == nil {
		t.Error("a tenant created a namespace labelled as a team's")
	}

	if err := label(platform, ns, adopt+"=mine"); err != nil {
		t.Fatalf("the platform team confirming: %v", err)
	}
	wantAdoptRefusal(t, "a tenant removing the confirmation", adoptLabelPolicy, label(tenant, ns, adopt+"-"))
	wantAdoptRefusal(t, "a tenant moving the confirmation", adoptLabelPolicy, label(tenant, ns, adopt+"=theirs"))
	// Adopted (the engine keeps the labels found in an annotation): the
	// confirmation stays until the namespace is released, and the
	// annotation is not a tenant's either.
	annotate := func(who []string, kv string) error {
		_, err := kubectl(t, "", append(who, "annotate", "--overwrite", "namespace", ns, kv)...)
		return err
	}
	found := teamspace.AdoptFoundAnnotation
	wantAdoptRefusal(t, "a tenant writing the labels release puts back", adoptLabelPolicy, annotate(tenant, found+`={"pod-security.kubernetes.io/enforce":"privileged"}`), "what release puts back")
	if err := annotate(platform, found+"={}"); err != nil {
		t.Fatalf("the annotation of an adopted namespace (as the engine sets it): %v", err)
	}
	wantAdoptRefusal(t, "a tenant removing the labels release puts back", adoptLabelPolicy, annotate(tenant, found+"-"))
	wantAdoptRefusal(t, "removing the confirmation of an adopted namespace", adoptLabelPolicy, label(platform, ns, adopt+"-"), "still adopted by TeamSpace mine", "release it first")
	if err := annotate(platform, found+"-"); err != nil {
		t.Fatalf("the annotation removed (released): %v", err)
	}
	if err := label(platform, ns, adopt+"-"); err != nil {
		t.Errorf("removing the confirmation of a released namespace: %v", err)
	}

	for _, sys := range []string{"kube-system", "default"} {
		wantAdoptRefusal(t, "the platform team confirming "+sys, adoptLabelPolicy, label(platform, sys, adopt+"=mine"), "never set on them")
		wantAdoptRefusal(t, "an admin labelling "+sys, adoptLabelPolicy, label(nil, sys, team+"=mine"), "never set on them")
	}
	teamNS := "team-adopt-" + s
	mustKubectl(t, "", "create", "namespace", teamNS)
	deleteOnCleanup(t, "namespace", teamNS)
	wantAdoptRefusal(t, "the platform team confirming a team-* namespace", adoptLabelPolicy, label(platform, teamNS, adopt+"=mine"), "TeamSpaces' own")
}
