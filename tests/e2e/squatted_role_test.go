package e2e

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// stepSquattedOwnerRole (issue #40): a ClusterRole named
// teamspace-owner-<name> that someone else made before TeamSpace <name>
// exists is never bound to its owners. Before, the engine's create of the
// role failed ("already exists"), the hook asked for the binding all the
// same, and the owner held whatever the stranger's role granted (here:
// deleting any namespace). Now the TeamSpace says ClusterRoleConflict and
// binds nothing until that role is gone; then its own role and binding
// come, and the owner holds an owner's access only.
func stepSquattedOwnerRole(t *testing.T, w *walk) {
	const name, owner = "squat", "mallory"
	role := "teamspace-owner-" + name
	stranger := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "delete"},
	}}}
	if _, err := w.kube.RbacV1().ClusterRoles().Create(w.ctx, stranger, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the stranger's ClusterRole %s: %v", role, err)
	}
	t.Cleanup(func() { _ = w.kube.RbacV1().ClusterRoles().Delete(w.ctx, role, metav1.DeleteOptions{}) })
	w.createTeamSpace(t, name, 1, "100m")
	w.patchTeamSpace(t, name, `{"spec":{"owners":[{"kind":"User","name":"`+owner+`"}]}}`)
	var reason, message string
	w.poll(t, name+" says ClusterRoleConflict", func() bool {
		reason, message = w.readyReason(name)
		return w.observedCurrent(name) && reason == "ClusterRoleConflict"
	})
	t.Logf("%s: %s", reason, message)
	mayDeleteNamespaces := func() bool {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: owner, Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Resource: "namespaces", Name: "kube-system"},
		}}
		r, err := w.kube.AuthorizationV1().SubjectAccessReviews().Create(w.ctx, sar, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status.Allowed
	}
	_, bindingErr := w.kube.RbacV1().ClusterRoleBindings().Get(w.ctx, role, metav1.GetOptions{})
	if !apierrors.IsNotFound(bindingErr) {
		t.Errorf("ClusterRoleBinding %s while the role is a stranger's: %v, want NotFound", role, bindingErr)
	}
	if mayDeleteNamespaces() {
		t.Errorf("owner %s may delete namespaces through the stranger's ClusterRole %s", owner, role)
	}
	// Readiness of the rest is not held back: the namespace is there.
	if _, ok := w.namespace("team-" + name); !ok {
		t.Errorf("no namespace team-%s while its owner role's name is taken", name)
	}

	if err := w.kube.RbacV1().ClusterRoles().Delete(w.ctx, role, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+" Ready with its own owner role", func() bool { return w.observedCurrent(name) && w.ready(name) })
	owned, err := w.kube.RbacV1().ClusterRoles().Get(w.ctx, role, metav1.GetOptions{})
	if err != nil || len(owned.OwnerReferences) == 0 || owned.OwnerReferences[0].Kind != "TeamSpace" {
		t.Errorf("ClusterRole %s after the stranger's went: %v %v, want one the TeamSpace owns", role, owned, err)
	}
	client := dynamic.NewForConfigOrDie(w.as(owner)).Resource(teamSpaces)
	w.poll(t, owner+" may get "+name, func() bool { _, err := client.Get(w.ctx, name, metav1.GetOptions{}); return err == nil })
	if mayDeleteNamespaces() {
		t.Errorf("owner %s may delete namespaces with the TeamSpace's own role", owner)
	}
	if err := w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+" gone", func() bool { return w.gone(name) })
	w.evidence(t, "squatted-owner-role.json", map[string]any{
		"stranger_role": role, "status_reason": reason, "status_message": message, "binding_while_squatted": errText(bindingErr),
		"measured": "the admin makes the stranger's ClusterRole first; SubjectAccessReviews for the owner; the real engine",
	})
}
