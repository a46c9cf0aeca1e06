package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/testenv"
)

// installOwnerAccess applies what install.sh applies for the owners'
// access (issue #27) beside the limits: the engine's role (rbac.yaml),
// namespaces.yaml, owner-access.yaml and team-use.yaml (the tenant's
// policies), and waits until the policy decides.
func installOwnerAccess(t *testing.T) {
	t.Helper()
	installLimits(t)
	testenv.Setup(t, "owner-access", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "namespaces.yaml"), "-f", deployFile(t, "owner-access.yaml"), "-f", deployFile(t, "team-use.yaml"))
		probe := clusterRoleJSON("teamspace-not-the-shape", "other", "get")
		if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
			_, err := kubectl(t, probe, "--as="+engineIdentity, "create", "--dry-run=server", "-f", "-")
			return err != nil && strings.Contains(err.Error(), "the TeamSpace engine may")
		}) {
			t.Fatal("owner-access.yaml does not refuse the engine a ClusterRole of another name 10s after it was applied")
		}
	})
}

// createOwned creates a TeamSpace as the admin and applies the hook's
// answer to it as the engine would (engineStandIn); the owners' role and
// binding are removed when the test ends.
func createOwned(t *testing.T, name string, spec map[string]any) {
	t.Helper()
	createOwnedAs(t, nil, name, spec)
}

// createOwnedAs is createOwned with the TeamSpace created as who (a
// requester's gets the platform's defaults from requested-by.yaml).
func createOwnedAs(t *testing.T, who []string, name string, spec map[string]any) {
	t.Helper()
	if err := createAs(t, who, name, spec); err != nil {
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
	parallel(t)
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
	parallel(t)
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

// TestOwnersReservedSubjects (issues #27, #40): the API server's own users
// and groups (system:unauthenticated, system:authenticated, system:masters,
// ...) and the ServiceAccounts of kube-* and teamspace-system are never
// owners. A requester naming one at create, and an owner adding one, are
// refused in one line naming the field, the value and the rule. The
// platform (exempt) may store one; it is bound nowhere, so that neither an
// anonymous client nor any authenticated user reaches the namespace's
// Secrets or the TeamSpace through it, while the owner named beside it
// does. (Before #40 an owner wrote system:unauthenticated into owners and
// anonymous clients read the namespace's Secrets.)
func TestOwnersReservedSubjects(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	sfx, requester := limitsCast(t, "requester")
	owner, anyone := "owner-"+sfx, "anyone-"+sfx
	wide := "wide-" + sfx
	user := func(name string) map[string]any { return map[string]any{"kind": "User", "name": name} }
	group := func(name string) map[string]any { return map[string]any{"kind": "Group", "name": name} }
	sa := func(ns, name string) map[string]any {
		return map[string]any{"kind": "ServiceAccount", "namespace": ns, "name": name}
	}
	spec := func(owners ...map[string]any) map[string]any {
		list := []any{}
		for _, o := range owners {
			list = append(list, o)
		}
		return with(within(), "owners", list)
	}
	for what, c := range map[string]struct {
		o    map[string]any
		want string
	}{
		"system:unauthenticated": {group("system:unauthenticated"), "spec.owners: Group system:unauthenticated may not be an owner"},
		"system:authenticated":   {group("system:authenticated"), "spec.owners: Group system:authenticated may not be an owner"},
		"system:masters":         {group("system:masters"), "spec.owners: Group system:masters may not be an owner"},
		"a system: user":         {user("system:kube-controller-manager"), "spec.owners: User system:kube-controller-manager may not be an owner"},
		"a kube-system SA":       {sa("kube-system", "default"), "spec.owners: ServiceAccount kube-system/default may not be an owner"},
		"the engine's SA":        {sa("teamspace-system", "metacontroller"), "spec.owners: ServiceAccount teamspace-system/metacontroller may not be an owner"},
	} {
		err := createAs(t, as(requester), "res-"+sfx, spec(user(requester), c.o))
		wantLimitRefusal(t, "a requester naming "+what+" as owner", err, c.want, "system: users and groups are the API server's own")
	}
	if err := createAs(t, as(requester), "res-ok-"+sfx, spec(user(requester), sa("tools", "ci"), group("devs"))); err != nil {
		t.Errorf("a requester naming a user, a group and a ServiceAccount of another namespace: %v", err)
	}

	// Stored by the platform (the admin is system:masters): never bound.
	createOwned(t, wide, spec(user(owner), group("system:authenticated"), group("system:unauthenticated"), group("system:masters")))
	ns := teamspace.NamespaceName(wide)
	mustKubectl(t, "", "create", "secret", "generic", "team-secret", "-n", ns, "--from-literal=k=v")
	for _, b := range []string{"rolebinding -n " + ns + " team-owners", "clusterrolebinding " + teamspace.OwnerAccessName(wide)} {
		out := mustKubectl(t, "", append(strings.Fields("get "+b), "-o", "jsonpath={.subjects[*].name}")...)
		if out != owner {
			t.Errorf("%s binds %q, want only the owner %s", b, out, owner)
		}
	}
	anonymous := []string{"--as=system:anonymous", "--as-group=system:unauthenticated"}
	for who, args := range map[string][]string{"an anonymous client": anonymous, "any authenticated user": as(anyone)} {
		for what, cmd := range map[string][]string{
			"read the namespace's Secrets": {"get", "secret", "team-secret", "-n", ns},
			"get the TeamSpace":            {"get", "teamspace", wide},
			"change its owners":            {"patch", "teamspace", wide, "--type=merge", "-p", `{"spec":{"owners":[{"kind":"User","name":"` + anyone + `"}]}}`, "--dry-run=server"},
		} {
			if _, err := kubectl(t, "", append(args, cmd...)...); err == nil || !strings.Contains(err.Error(), "forbidden") {
				t.Errorf("%s, through owners naming system: groups, may %s: %v", who, what, err)
			}
		}
	}
	if _, err := kubectl(t, "", append(as(owner), "get", "secret", "team-secret", "-n", ns)...); err != nil {
		t.Errorf("the owner beside them cannot read the namespace's Secret: %v", err)
	}
	// The owner may not add one either (an update, checked on what it adds).
	_, err := kubectl(t, "", append(as(owner), "patch", "teamspace", wide, "--type=merge", "-p",
		`{"spec":{"owners":[{"kind":"User","name":"`+owner+`"},{"kind":"Group","name":"system:authenticated"},{"kind":"Group","name":"system:serviceaccounts"}]}}`)...)
	wantLimitRefusal(t, "an owner adding system:serviceaccounts", err, "spec.owners: Group system:serviceaccounts may not be an owner")
	// ... while changing the rest of the owners is not refused for the
	// reserved entries already stored.
	if _, err := kubectl(t, "", append(as(owner), "patch", "teamspace", wide, "--type=merge", "-p",
		`{"spec":{"owners":[{"kind":"User","name":"`+owner+`"},{"kind":"Group","name":"system:authenticated"},{"kind":"User","name":"teammate-`+sfx+`"}]}}`, "--dry-run=server")...); err != nil {
		t.Errorf("the owner adding a teammate beside stored reserved entries: %v", err)
	}
}

// TestOwnersDelegation (issue #40): an owner may bind roles in the team
// namespace only to its own ServiceAccounts. Before, an owner bound
// themself a second time and kept reading the namespace's Secrets after
// being taken out of spec.owners; now that binding is refused in one line,
// and removal takes the access away.
func TestOwnersDelegation(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	sfx := suffix(t, 6)
	owner := "owner-" + sfx
	name := "deleg-" + sfx
	ns := teamspace.NamespaceName(name)
	createOwned(t, name, with(within(), "owners", []any{map[string]any{"kind": "User", "name": owner}}))
	mustKubectl(t, "", "create", "secret", "generic", "team-secret", "-n", ns, "--from-literal=k=v")
	bind := func(subject string) error {
		_, err := kubectl(t, "", append(as(owner), "-n", ns, "create", "rolebinding", "mine-"+sfx, "--clusterrole=view", subject, "--dry-run=server")...)
		return err
	}
	for what, subject := range map[string]string{
		"themself":                       "--user=" + owner,
		"a friend":                       "--user=friend-" + sfx,
		"a group":                        "--group=devs",
		"a ServiceAccount of another ns": "--serviceaccount=tools:ci",
		"system:authenticated":           "--group=system:authenticated",
	} {
		err := bind(subject)
		if err == nil || !strings.Contains(err.Error(), "are not ServiceAccounts of "+ns) || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Errorf("an owner binding %s in %s: %v, want one line refusing it", what, ns, err)
		}
	}
	if err := bind("--serviceaccount=" + ns + ":default"); err != nil {
		t.Errorf("an owner binding the namespace's own ServiceAccount: %v, want allowed", err)
	}
	// Taken out of the owners (by the platform), the owner reads nothing.
	mustKubectl(t, "", "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"owners":[{"kind":"User","name":"other-`+sfx+`"}]}}`)
	engineStandIn(t, name)
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		_, err := kubectl(t, "", append(as(owner), "get", "secret", "team-secret", "-n", ns)...)
		return err != nil && strings.Contains(err.Error(), "forbidden")
	}) {
		t.Errorf("the removed owner still reads %s's Secret", ns)
	}
}
