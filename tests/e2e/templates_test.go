package e2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// stepTemplates (issue #53): what the platform puts in every team
// namespace, on the real engine. TeamSpace theta (owner ann, label
// tier=silver) beside those of the earlier steps:
//
//   - a ConfigMap (the company CA) and a pull Secret labelled as templates
//     in teamspace-system reach every team namespace, carrying the
//     TeamSpace label; a NetworkPolicy for tier=gold reaches none of
//     theta's until theta is labelled gold, and goes when it is not;
//   - the CA changed reaches every copy;
//   - the owner cannot change or delete a copy (teamspace-children); a
//     copy deleted by the platform comes back;
//   - a template whose name the team already uses in its namespace leaves
//     the team's object as it is, and theta's status.templates says so;
//   - a template deleted, or its label taken off, takes its copies away.
func stepTemplates(t *testing.T, w *walk) {
	const name = "theta"
	ns := teamspace.NamespaceName(name)
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
		"metadata": map[string]any{"name": name, "labels": map[string]any{"tier": "silver"}},
		"spec":     map[string]any{"pods": 2, "owners": []any{map[string]any{"kind": "User", "name": "ann"}}},
	}}
	if _, err := w.dyn.Resource(teamSpaces).Create(w.ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating TeamSpace %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{})
		w.poll(t, name+" gone", func() bool { return w.gone(name) })
	})
	w.poll(t, name+" Ready", func() bool { return w.observedCurrent(name) && w.ready(name) })

	// The team already has a ConfigMap named as the platform's next one.
	ann := kubernetes.NewForConfigOrDie(w.as("ann"))
	teams := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "endpoints"}, Data: map[string]string{"owner": "team"}}
	if _, err := ann.CoreV1().ConfigMaps(ns).Create(w.ctx, teams, metav1.CreateOptions{}); err != nil {
		t.Fatalf("owner ann creating ConfigMap %s/endpoints: %v", ns, err)
	}

	cms := w.kube.CoreV1().ConfigMaps(teamspace.TemplatesNamespace)
	secrets := w.kube.CoreV1().Secrets(teamspace.TemplatesNamespace)
	nps := w.kube.NetworkingV1().NetworkPolicies(teamspace.TemplatesNamespace)
	tmpl := func(n string, selector string) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Name: n, Labels: map[string]string{v1alpha1.TemplateLabel: "true"}}
		if selector != "" {
			m.Annotations = map[string]string{v1alpha1.TemplateSelectorAnnotation: selector}
		}
		return m
	}
	ca := &corev1.ConfigMap{ObjectMeta: tmpl("company-ca", ""), Data: map[string]string{"ca.crt": "first"}}
	pull := &corev1.Secret{ObjectMeta: tmpl("registry-pull", ""), Type: corev1.SecretTypeDockerConfigJson,
		Data: map[string][]byte{corev1.DockerConfigJsonKey: []byte(`{"auths":{"registry.example.com":{"auth":"dXNlcjpwYXNz"}}}`)}}
	monitoring := &networkingv1.NetworkPolicy{ObjectMeta: tmpl("allow-monitoring", "tier=gold"), Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}}}}}
	endpoints := &corev1.ConfigMap{ObjectMeta: tmpl("endpoints", ""), Data: map[string]string{"owner": "platform"}}
	t.Cleanup(func() {
		_ = cms.Delete(w.ctx, ca.Name, metav1.DeleteOptions{})
		_ = cms.Delete(w.ctx, endpoints.Name, metav1.DeleteOptions{})
		_ = secrets.Delete(w.ctx, pull.Name, metav1.DeleteOptions{})
		_ = nps.Delete(w.ctx, monitoring.Name, metav1.DeleteOptions{})
	})

	// Every team namespace there is now, of every TeamSpace.
	list, err := w.kube.CoreV1().Namespaces().List(w.ctx, metav1.ListOptions{LabelSelector: v1alpha1.TeamSpaceLabel})
	if err != nil {
		t.Fatal(err)
	}
	var teamNamespaces []string
	for _, n := range list.Items {
		if n.Status.Phase == corev1.NamespaceActive && n.DeletionTimestamp == nil {
			teamNamespaces = append(teamNamespaces, n.Name)
		}
	}
	if !slices.Contains(teamNamespaces, ns) {
		t.Fatalf("team namespaces %v: %s missing", teamNamespaces, ns)
	}
	caIn := func(n, want string) bool {
		c, err := w.kube.CoreV1().ConfigMaps(n).Get(w.ctx, ca.Name, metav1.GetOptions{})
		return err == nil && c.Data["ca.crt"] == want && c.Labels[v1alpha1.TeamSpaceLabel] != "" && c.Labels[v1alpha1.TemplateLabel] == ""
	}
	pullIn := func(n string) bool {
		s, err := w.kube.CoreV1().Secrets(n).Get(w.ctx, pull.Name, metav1.GetOptions{})
		return err == nil && s.Type == corev1.SecretTypeDockerConfigJson && string(s.Data[corev1.DockerConfigJsonKey]) == string(pull.Data[corev1.DockerConfigJsonKey])
	}
	everywhere := func(cond func(n string) bool) func() bool {
		return func() bool {
			for _, n := range teamNamespaces {
				if !cond(n) {
					return false
				}
			}
			return true
		}
	}
	added := time.Now()
	if _, err := cms.Create(w.ctx, ca, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(w.ctx, pull, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := nps.Create(w.ctx, monitoring, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "the CA and the pull Secret in every team namespace", everywhere(func(n string) bool { return caIn(n, "first") && pullIn(n) }))
	addedIn := time.Since(added)
	monitoringIn := func() bool {
		_, err := w.kube.NetworkingV1().NetworkPolicies(ns).Get(w.ctx, monitoring.Name, metav1.GetOptions{})
		return err == nil
	}
	if monitoringIn() {
		t.Errorf("NetworkPolicy %s/%s is there, but %s is tier=silver and the template selects tier=gold", ns, monitoring.Name, name)
	}
	w.poll(t, name+" Ready with the copies", func() bool { return w.ready(name) && len(w.templateStatus(name)) == 0 })

	// The TeamSpace's labels select: gold gains the policy, silver loses it.
	w.patchTeamSpace(t, name, `{"metadata":{"labels":{"tier":"gold"}}}`)
	w.poll(t, "the gold policy in "+ns, monitoringIn)
	w.patchTeamSpace(t, name, `{"metadata":{"labels":{"tier":"silver"}}}`)
	w.poll(t, "the gold policy gone from "+ns, func() bool { return !monitoringIn() })

	// The template changed: every copy follows.
	changed := time.Now()
	if _, err := cms.Patch(w.ctx, ca.Name, types.MergePatchType, []byte(`{"data":{"ca.crt":"second"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "the changed CA in every team namespace", everywhere(func(n string) bool { return caIn(n, "second") }))
	changedIn := time.Since(changed)

	// The templates' bundle (issue #55), the one object every TeamSpace
	// reads them from, deleted by hand: it comes back, and no copy went
	// meanwhile (the same object, not one made again).
	before, err := w.kube.CoreV1().ConfigMaps(ns).Get(w.ctx, ca.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := secrets.Get(w.ctx, teamspace.TemplatesBundleName, metav1.GetOptions{}); err != nil || len(b.OwnerReferences) != 1 || b.OwnerReferences[0].Kind != "CompositeController" {
		t.Fatalf("the templates' bundle: %v, want Secret %s/%s owned by the CompositeController", err, teamspace.TemplatesNamespace, teamspace.TemplatesBundleName)
	}
	if err := secrets.Delete(w.ctx, teamspace.TemplatesBundleName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "the templates' bundle back", func() bool {
		b, err := secrets.Get(w.ctx, teamspace.TemplatesBundleName, metav1.GetOptions{})
		return err == nil && strings.Contains(string(b.Data[teamspace.TemplatesBundleKey]), `"second"`)
	})
	w.poll(t, name+" Ready with the bundle back", func() bool { return w.ready(name) })
	if after, err := w.kube.CoreV1().ConfigMaps(ns).Get(w.ctx, ca.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the CA copy in %s after the bundle was deleted: %v", ns, err)
	} else if after.UID != before.UID {
		t.Errorf("the CA copy in %s was made again (uid %s, before %s) while the bundle was deleted, want it kept", ns, after.UID, before.UID)
	}

	// The owner can change or delete no copy; the platform's deletion is undone.
	_, editErr := ann.CoreV1().ConfigMaps(ns).Patch(w.ctx, ca.Name, types.MergePatchType, []byte(`{"data":{"ca.crt":"mine"}}`), metav1.PatchOptions{})
	deleteErr := ann.CoreV1().Secrets(ns).Delete(w.ctx, pull.Name, metav1.DeleteOptions{})
	for what, err := range map[string]error{"change the CA copy": editErr, "delete the pull Secret copy": deleteErr} {
		if err == nil || !strings.Contains(err.Error(), "teamspace-children") || !strings.Contains(err.Error(), "copy of the platform's template") {
			t.Errorf("owner ann may %s in %s: %v, want refused by teamspace-children, naming the platform's template", what, ns, err)
		}
	}
	if err := w.kube.CoreV1().Secrets(ns).Delete(w.ctx, pull.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	w.poll(t, "the pull Secret copy back in "+ns, func() bool { return pullIn(ns) })
	restoredIn := time.Since(deleted)

	// A name the team already uses: its object stays, the status says so.
	if _, err := cms.Create(w.ctx, endpoints, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+"'s status.templates naming endpoints in "+ns, func() bool {
		for _, s := range w.templateStatus(name) {
			if s["template"] == "ConfigMap endpoints" && s["namespace"] == ns && s["reason"] == teamspace.TemplateNotCopied {
				return true
			}
		}
		return false
	})
	if c, err := w.kube.CoreV1().ConfigMaps(ns).Get(w.ctx, endpoints.Name, metav1.GetOptions{}); err != nil || c.Data["owner"] != "team" {
		t.Errorf("the team's ConfigMap %s/endpoints: %v %v, want kept as the team made it", ns, err, c.Data)
	}
	// Ready again once team-objects has the count raised by the copy (a
	// template added changes the quota: Ready is QuotaOutOfDate for that
	// one pass).
	w.poll(t, name+" Ready beside a template not copied", func() bool { return w.ready(name) })
	clashStatus := w.templateStatus(name)

	// Removed: deleted, or the label taken off.
	removed := time.Now()
	if err := cms.Delete(w.ctx, ca.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Patch(w.ctx, pull.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"`+v1alpha1.TemplateLabel+`":null}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "the CA and pull Secret copies gone from every team namespace", everywhere(func(n string) bool {
		_, errCM := w.kube.CoreV1().ConfigMaps(n).Get(w.ctx, ca.Name, metav1.GetOptions{})
		_, errS := w.kube.CoreV1().Secrets(n).Get(w.ctx, pull.Name, metav1.GetOptions{})
		return errCM != nil && errS != nil
	}))
	removedIn := time.Since(removed)
	if err := cms.Delete(w.ctx, endpoints.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+"'s status.templates empty", func() bool { return len(w.templateStatus(name)) == 0 })
	if c, err := w.kube.CoreV1().ConfigMaps(ns).Get(w.ctx, endpoints.Name, metav1.GetOptions{}); err != nil || c.Data["owner"] != "team" {
		t.Errorf("the team's ConfigMap %s/endpoints after the template went: %v %v, want kept", ns, err, c.Data)
	}

	w.evidence(t, "templates.json", map[string]any{
		"team_namespaces":       len(teamNamespaces),
		"added_everywhere":      addedIn.Round(time.Millisecond).String(),
		"changed_everywhere":    changedIn.Round(time.Millisecond).String(),
		"removed_everywhere":    removedIn.Round(time.Millisecond).String(),
		"copy_deleted_restored": restoredIn.Round(time.Millisecond).String(),
		"owner_edit_refused":    fmt.Sprint(editErr),
		"owner_delete_refused":  fmt.Sprint(deleteErr),
		"name_taken_status":     clashStatus,
		"selected_by_tier_gold": true,
	})
}

// templateStatus is a TeamSpace's status.templates.
func (w *walk) templateStatus(name string) []map[string]any {
	ts, err := w.teamSpace(name)
	if err != nil {
		return nil
	}
	list, _, _ := unstructured.NestedSlice(ts.Object, "status", "templates")
	var out []map[string]any
	for _, s := range list {
		if m, ok := s.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}
