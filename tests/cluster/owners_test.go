package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/teamspace"
)

// installOwnerAccess applies what install.sh applies for the owners'
// access (issue #27) beside the limits: the engine's role (rbac.yaml),
// namespaces.yaml and owner-access.yaml, and waits until the policy decides.
func installOwnerAccess(t *testing.T) {
	t.Helper()
	installLimits(t)
	mustKubectl(t, "", "apply", "-f", deployFile(t, "namespaces.yaml"), "-f", deployFile(t, "owner-access.yaml"))
	probe := clusterRoleJSON("teamspace-not-the-shape", "other", "get")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		_, err := kubectl(t, probe, "--as="+engineIdentity, "create", "--dry-run=server", "-f", "-")
		return err != nil && strings.Contains(err.Error(), "the TeamSpace engine may")
	}) {
		t.Fatal("owner-access.yaml does not refuse the engine a ClusterRole of another name 10s after it was applied")
	}
}

// createOwned creates a TeamSpace as the admin and applies the hook's
// answer to it as the engine would (engineStandIn); the owners' role and
// binding are removed when the test ends.
func createOwned(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	if err := createAs(t, nil, name, spec); err != nil {
		t.Fatal(err)
	}
	deleteOnCleanup(t, "clusterrole", teamspace.OwnerAccessName(name))
	deleteOnCleanup(t, "clusterrolebinding", teamspace.OwnerAccessName(name))
	engineStandIn(t, name)
}

// clusterRoleJSON is a ClusterRole with one rule on teamspaces named
// resourceName.
func clusterRoleJSON(name, resourceName string, verbs ...string) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
		"metadata": map[string]any{"name": name},
		"rules": []any{map[string]any{
			"apiGroups": []string{"platform.labhub.io"}, "resources": []string{"teamspaces"},
			"resourceNames": []string{resourceName}, "verbs": verbs,
		}},
	})
	return string(b)
}

// TestOwnersReadTheirOwn (issue #27): a subject in spec.owners may get and
// watch their TeamSpace and no other, may not list TeamSpaces, may change
// spec.owners of it and nothing else, and loses the access when taken out
// of the list. The engine is stood in for by
// applying the hook's own answer as the engine's ServiceAccount, so the
// engine's RBAC and owner-access.yaml are what admits the owners' role and
// binding.
func TestOwnersReadTheirOwn(t *testing.T) {
	installOwnerAccess(t)
	sfx := suffix(t, 6)
	owner, outsider := "owner-"+sfx, "outsider-"+sfx
	mine, theirs := "own-"+sfx, "theirs-"+sfx
	ownedBy := func(users ...string) map[string]any {
		var owners []any
		for _, u := range users {
			owners = append(owners, map[string]any{"kind": "User", "name": u})
		}
		return map[string]any{"pods": 2, "cpu": "1", "memory": "1Gi", "owners": owners}
	}
	createOwned(t, mine, ownedBy(owner))
	createOwned(t, theirs, ownedBy(outsider))

	who := as(owner)
	if _, err := kubectl(t, "", append(who, "get", "teamspace", mine)...); err != nil {
		t.Errorf("the owner cannot get their own TeamSpace: %v", err)
	}
	// A watch of one object by name (what kubectl get -w does): it ends at
	// the request timeout without an error when it is allowed.
	if out, err := kubectl(t, "", append(who, "get", "teamspace", mine, "--watch", "--request-timeout=2s")...); err != nil && strings.Contains(err.Error()+out, "forbidden") {
		t.Errorf("the owner cannot watch their own TeamSpace: %v", err)
	}
	for what, args := range map[string][]string{
		"get another's TeamSpace":  {"get", "teamspace", theirs},
		"list TeamSpaces":          {"get", "teamspaces"},
		"delete their TeamSpace":   {"delete", "teamspace", mine, "--dry-run=server"},
		"read the owners' binding": {"get", "clusterrolebinding", teamspace.OwnerAccessName(mine)},
	} {
		if _, err := kubectl(t, "", append(who, args...)...); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("an owner may %s: %v", what, err)
		}
	}

	// Managing the team: spec.owners and nothing else.
	teammate := `{"kind":"User","name":"` + owner + `"},{"kind":"User","name":"mate-` + sfx + `"}`
	if _, err := kubectl(t, "", append(who, "patch", "teamspace", mine, "--type=merge", "-p", `{"spec":{"owners":[`+teammate+`]}}`)...); err != nil {
		t.Errorf("the owner cannot add a teammate: %v", err)
	}
	if _, err := kubectl(t, "", append(who, "patch", "teamspace", mine, "--type=merge", "-p", `{"spec":{"owners":[{"kind":"User","name":"`+owner+`"}]}}`)...); err != nil {
		t.Errorf("the owner cannot remove a teammate: %v", err)
	}
	for what, c := range map[string]struct{ patch, want string }{
		"pods":            {`{"spec":{"pods":3}}`, "also changes spec.pods"},
		"podSecurity":     {`{"spec":{"podSecurity":"restricted"}}`, "also changes spec.podSecurity"},
		"owners and pods": {`{"spec":{"pods":3,"owners":[` + teammate + `]}}`, "also changes spec.pods"},
		"a finalizer":     {`{"metadata":{"finalizers":["example.com/keep"]}}`, "also changes metadata.finalizers"},
		"an annotation":   {`{"metadata":{"annotations":{"example.com/note":"mine"}}}`, "also changes metadata.annotations"},
		"a label":         {`{"metadata":{"labels":{"team":"x"}}}`, "also changes metadata.labels"},
		"defaults":        {`{"spec":{"defaults":{"cpu":"100m"}}}`, "also changes spec.defaults"},
	} {
		_, err := kubectl(t, "", append(who, "patch", "teamspace", mine, "--type=merge", "-p", c.patch, "--dry-run=server")...)
		if err == nil || !strings.Contains(err.Error(), "an owner may change only spec.owners") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("an owner changing %s: %v, want refused by teamspace-owner-updates (%q)", what, err, c.want)
		}
	}
	// The requester annotation: refused (the limits policy answers first;
	// it protects the annotation from everyone outside the platform team).
	if _, err := kubectl(t, "", append(who, "patch", "teamspace", mine, "--type=merge", "-p", `{"metadata":{"annotations":{"platform.labhub.io/requested-by":"`+owner+`"}}}`, "--dry-run=server")...); err == nil {
		t.Errorf("an owner may change the requester annotation")
	}
	// Whoever may update every TeamSpace is not held to it (the limits
	// policy decides for them): here the admin.
	if _, err := kubectl(t, "", "patch", "teamspace", mine, "--type=merge", "-p", `{"spec":{"pods":3}}`, "--dry-run=server"); err != nil {
		t.Errorf("the admin cannot change pods: %v", err)
	}

	// Taken out of the list: the next answer binds only the new owner.
	mustKubectl(t, "", "patch", "teamspace", mine, "--type=merge", "-p", `{"spec":{"owners":[{"kind":"User","name":"`+outsider+`"}]}}`)
	engineStandIn(t, mine)
	if _, err := kubectl(t, "", append(who, "get", "teamspace", mine)...); err == nil || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("a removed owner can still get the TeamSpace: %v", err)
	}
	if _, err := kubectl(t, "", append(as(outsider), "get", "teamspace", mine)...); err != nil {
		t.Errorf("the new owner cannot get the TeamSpace: %v", err)
	}
}

// TestEngineOwnerAccessBounded (issue #27): the engine's rights on
// ClusterRoles and ClusterRoleBindings reach only the owners' role and
// binding of one TeamSpace. Each refusal must be owner-access.yaml's, not
// RBAC's escalation check: the cases are ones RBAC alone admits (the engine
// holds get on every TeamSpace and may bind ClusterRole admin).
func TestEngineOwnerAccessBounded(t *testing.T) {
	installOwnerAccess(t)
	victim := "ts-victim-" + suffix(t, 6)
	mustKubectl(t, "", "create", "clusterrole", victim, "--verb=get", "--resource=configmaps")
	deleteOnCleanup(t, "clusterrole", victim)
	binding := func(name, role string) string {
		b, _ := json.Marshal(map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": name},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "mallory"}},
		})
		return string(b)
	}
	engine := []string{"--as=" + engineIdentity}
	refused := []struct{ what, stdin, want string }{
		{"a role for another TeamSpace", clusterRoleJSON("teamspace-owner-alpha", "beta", "get"), "only as one rule"},
		{"a role that lists", clusterRoleJSON("teamspace-owner-alpha", "alpha", "get", "list"), "only as one rule"},
		{"a role of another name", clusterRoleJSON("alpha-readers", "alpha", "get"), "named teamspace-owner-<TeamSpace>"},
		{"a binding to ClusterRole admin", binding("teamspace-owner-alpha", "admin"), "only to ClusterRole teamspace-owner-alpha"},
		{"a binding of another name", binding("mallory-admin", "admin"), "named teamspace-owner-<TeamSpace>"},
	}
	for _, c := range refused {
		_, err := kubectl(t, c.stdin, append(engine, "create", "--dry-run=server", "-f", "-")...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("the engine creating %s: %v, want refused by teamspace-owner-access (%q)", c.what, err, c.want)
		}
	}
	if _, err := kubectl(t, "", append(engine, "delete", "clusterrole", victim, "--dry-run=server")...); err == nil || !strings.Contains(err.Error(), "named teamspace-owner-<TeamSpace>") {
		t.Errorf("the engine deleting ClusterRole %s: %v, want refused by teamspace-owner-access", victim, err)
	}
	// The right shape is admitted (RBAC resolves a binding's role, so the
	// role is really made, by the engine).
	owned := "teamspace-owner-" + strings.TrimPrefix(victim, "ts-victim-")
	if _, err := kubectl(t, clusterRoleJSON(owned, strings.TrimPrefix(owned, "teamspace-owner-"), "get", "watch"), append(engine, "create", "-f", "-")...); err != nil {
		t.Errorf("the engine may not create the owners' role of the right shape: %v", err)
	}
	deleteOnCleanup(t, "clusterrole", owned)
	if _, err := kubectl(t, binding(owned, owned), append(engine, "create", "--dry-run=server", "-f", "-")...); err != nil {
		t.Errorf("the engine may not create the owners' binding of the right shape: %v", err)
	}
}

// TestOwnersWideSubjects (issue #27): an owner who writes a group of
// everybody (system:authenticated) or of the admins (system:masters) into
// spec.owners gives those subjects what an owner has and nothing more.
// Every authenticated user may then read that one TeamSpace and change its
// owners, and no more than an owner: no list, no other TeamSpace, no other
// field, no delete, no create; and the owner who named system:masters is
// not one of them by it.
func TestOwnersWideSubjects(t *testing.T) {
	installOwnerAccess(t)
	sfx := suffix(t, 6)
	owner, anyone := "owner-"+sfx, "anyone-"+sfx
	wide, other := "wide-"+sfx, "other-"+sfx
	spec := func(owners ...map[string]any) map[string]any {
		var list []any
		for _, o := range owners {
			list = append(list, o)
		}
		return map[string]any{"pods": 2, "cpu": "1", "memory": "1Gi", "owners": list}
	}
	user := func(name string) map[string]any { return map[string]any{"kind": "User", "name": name} }
	group := func(name string) map[string]any { return map[string]any{"kind": "Group", "name": name} }
	createOwned(t, wide, spec(user(owner), group("system:authenticated"), group("system:masters")))
	createOwned(t, other, spec(user("someone-else-"+sfx)))
	// Impersonating a user without groups makes them system:authenticated,
	// as a real login does.
	for _, who := range [][]string{as(anyone), as(owner)} {
		if _, err := kubectl(t, "", append(who, "get", "teamspace", wide)...); err != nil {
			t.Errorf("%s cannot get TeamSpace %s: %v", who[0], wide, err)
		}
		for what, args := range map[string][]string{
			"list TeamSpaces":            {"get", "teamspaces"},
			"get another TeamSpace":      {"get", "teamspace", other},
			"delete the TeamSpace":       {"delete", "teamspace", wide, "--dry-run=server"},
			"create a TeamSpace":         {"create", "--dry-run=server", "-f", "-"},
			"read a secret elsewhere":    {"get", "secrets", "-n", "kube-system"},
			"bind cluster-admin":         {"create", "clusterrolebinding", "mine-" + sfx, "--clusterrole=cluster-admin", "--user=" + anyone, "--dry-run=server"},
			"write the TeamSpace status": {"patch", "teamspace", wide, "--subresource=status", "--type=merge", "-p", `{"status":{"observedGeneration":1}}`, "--dry-run=server"},
		} {
			stdin := ""
			if what == "create a TeamSpace" {
				stdin = teamSpace("mine-"+sfx, map[string]any{"pods": 1})
			}
			if _, err := kubectl(t, stdin, append(who, args...)...); err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("%s, through owners naming system:authenticated and system:masters, may %s: %v", who[0], what, err)
			}
		}
		// Privileged is refused by the limits too; within the limits, a
		// change of pods is refused by the owners' policy alone.
		if _, err := kubectl(t, "", append(who, "patch", "teamspace", wide, "--type=merge", "-p", `{"spec":{"podSecurity":"privileged"}}`, "--dry-run=server")...); err == nil || !strings.Contains(err.Error(), "denied request") {
			t.Errorf("%s making TeamSpace %s privileged: %v, want refused", who[0], wide, err)
		}
		_, err := kubectl(t, "", append(who, "patch", "teamspace", wide, "--type=merge", "-p", `{"spec":{"pods":1}}`, "--dry-run=server")...)
		if err == nil || !strings.Contains(err.Error(), "an owner may change only spec.owners") {
			t.Errorf("%s changing pods of TeamSpace %s: %v, want refused by teamspace-owner-updates", who[0], wide, err)
		}
	}
	// What they do get is an owner's: changing the owners.
	if _, err := kubectl(t, "", append(as(anyone), "patch", "teamspace", wide, "--type=merge", "-p", `{"spec":{"owners":[{"kind":"User","name":"`+owner+`"},{"kind":"Group","name":"system:authenticated"}]}}`)...); err != nil {
		t.Errorf("any authenticated user, an owner through system:authenticated, cannot change the owners: %v", err)
	}
}
