package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// TestChildrenStayThePlatforms (issue #41, item 5): in a team namespace its
// owner (admin there) cannot delete or change what the engine put there
// (NetworkPolicy team-isolation, RoleBinding team-owners: before, the
// engine put them back within a second, and a deleted team-isolation left
// the namespace open in between), nor make an object of their own look like
// one (the TeamSpace label); their own NetworkPolicies and RoleBindings are
// theirs. The engine and system:masters are not held, and deleting the
// namespace still completes (the namespace controller deletes the children).
func TestChildrenStayThePlatforms(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	s := suffix(t, 6)
	owner := "owner-" + s
	name := "kids-" + s
	createOwned(t, name, ownedBy(within(), owner))
	ns := teamspace.NamespaceName(name)
	run := func(who []string, args ...string) error {
		_, err := kubectl(t, "", append(append(who, "-n", ns), args...)...)
		return err
	}
	np, rb := "networkpolicy/"+teamspace.NetworkPolicyName, "rolebinding/"+teamspace.RoleBindingName
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err := run(as(owner), "delete", np, "--dry-run=server")
		return err != nil && strings.Contains(err.Error(), "teamspace-children")
	}) {
		t.Fatal("namespaces.yaml's teamspace-children does not refuse the owner deleting team-isolation 10s after it was applied")
	}
	refused := map[string][]string{
		"delete team-isolation":             {"delete", np, "--dry-run=server"},
		"delete team-owners":                {"delete", rb, "--dry-run=server"},
		"narrow team-isolation":             {"patch", np, "--type=merge", "-p", `{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}}}}`, "--dry-run=server"},
		"take the label off team-isolation": {"label", np, v1alpha1.TeamSpaceLabel + "-", "--dry-run=server"},
		"add a subject to team-owners":      {"patch", rb, "--type=json", "-p", `[{"op":"add","path":"/subjects/-","value":{"kind":"ServiceAccount","name":"default","namespace":"` + ns + `"}}]`, "--dry-run=server"},
	}
	for what, args := range refused {
		err := run(as(owner), args...)
		// A subject added to team-owners is refused by teamspace-delegation
		// too, whichever the API server asks first.
		if err == nil || !strings.Contains(err.Error(), "carries label "+v1alpha1.TeamSpaceLabel) && !strings.Contains(err.Error(), "teamspace-delegation") ||
			strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Errorf("the owner may %s: %v, want one line refusing it", what, err)
		}
		if err := run(as(engineIdentity), args...); err != nil {
			t.Errorf("the engine may not %s: %v", what, err)
		}
		if err := run(nil, args...); err != nil {
			t.Errorf("system:masters may not %s: %v", what, err)
		}
	}
	// Nor through the LimitRange: its annotation platform.labhub.io/quotas
	// is what the quotas' DecoratorController makes, and the quotas go
	// with it (their controller); an owner may neither change nor delete
	// it (the engine and the platform team may).
	lr := "limitrange/" + teamspace.LimitRangeName
	for what, args := range map[string][]string{
		"write " + v1alpha1.QuotasAnnotation: {"annotate", "--overwrite", lr, v1alpha1.QuotasAnnotation + `={"team-quota":{"pods":"1000"}}`, "--dry-run=server"},
		"delete " + teamspace.LimitRangeName: {"delete", lr, "--dry-run=server"},
	} {
		if err := run(as(owner), args...); err == nil || !strings.Contains(err.Error(), "forbidden") {
			t.Errorf("the owner may %s in %s: %v, want forbidden", what, ns, err)
		}
		if err := run(as(engineIdentity), args...); err != nil {
			t.Errorf("the engine may not %s in %s: %v", what, ns, err)
		}
	}
	labelled := `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"fake","labels":{"` + v1alpha1.TeamSpaceLabel + `":"` + name + `"}},"spec":{"podSelector":{}}}`
	if err := dryRunCreate(t, as(owner), ns, labelled); err == nil || !strings.Contains(err.Error(), "only the engine and the platform team may create it") {
		t.Errorf("the owner's NetworkPolicy with the TeamSpace label: %v, want refused", err)
	}
	own := `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"mine"},"spec":{"podSelector":{},"ingress":[{"from":[{"podSelector":{}}]}]}}`
	if _, err := kubectl(t, own, append(as(owner), "-n", ns, "create", "-f", "-")...); err != nil {
		t.Errorf("the owner's own NetworkPolicy: %v", err)
	}
	if err := run(as(owner), "delete", "networkpolicy", "mine"); err != nil {
		t.Errorf("the owner deleting their own NetworkPolicy: %v", err)
	}
	if err := run(as(owner), "create", "rolebinding", "ci", "--clusterrole=view", "--serviceaccount="+ns+":default"); err != nil {
		t.Errorf("the owner's own RoleBinding of the namespace's ServiceAccount: %v", err)
	}

	// Whoever may change namespaces (here a role for namespaces alone, not
	// cluster-admin, whose wildcard holds the engine's grant too) may change
	// and delete the team namespace itself: before, the policy matched the
	// Namespace too and refused with a CEL error (namespaceObject is null).
	admin := "namespace-admin-" + s
	role := "ts-test-namespaces-" + s
	mustKubectl(t, "", "create", "clusterrole", role, "--verb=get,patch,update,delete", "--resource=namespaces")
	deleteOnCleanup(t, "clusterrole", role)
	bindRole(t, role, "User", admin)
	if _, err := kubectl(t, "", append(as(admin), "annotate", "namespace", ns, "example.com/cost-centre=42", "--dry-run=server")...); err != nil {
		t.Errorf("a namespace admin annotating %s: %v", ns, err)
	}
	if _, err := kubectl(t, "", append(as(admin), "delete", "namespace", ns, "--dry-run=server")...); err != nil {
		t.Errorf("a namespace admin deleting %s: %v", ns, err)
	}

	// The namespace's end: its controller deletes the children.
	mustKubectl(t, "", "delete", "namespace", ns, "--wait=false")
	if !eventually(60*time.Second, 250*time.Millisecond, func() bool {
		_, err := kubectl(t, "", "get", "namespace", ns)
		return isNotFound(err)
	}) {
		out, _ := kubectl(t, "", "get", "namespace", ns, "-o", "jsonpath={.status.conditions}")
		t.Errorf("namespace %s not gone 60s after its delete: %s", ns, out)
	}
}
