package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// stepAdoption (issue #66): an existing namespace taken into a TeamSpace
// and let go, on the real engine, with nothing of the team's disturbed.
// Namespace legacy holds what a team runs: a Deployment (its pod, which
// no node runs here), a PVC, a quota of its own, a RoleBinding and a
// NetworkPolicy, and enforces Pod Security privileged.
//
//   - TeamSpace iota names it in an entry's adopt: its status shows the
//     plan (share, use, what it adds, the team's own objects, Pod Security
//     found) and nothing is written in legacy;
//   - its owner (impersonated) may not point adopt elsewhere, nor label a
//     namespace to claim it;
//   - the platform team labels legacy platform.labhub.io/adopt=iota:
//     legacy gets its share's quota, defaults and the owners' binding, the
//     TeamSpace label and Pod Security warn and audit (enforce kept as it
//     was); the namespace gets no ownerReference, and iota is Ready;
//   - the entry taken off releases it: iota's objects go, the labels are
//     as they were; taken in again, then iota deleted: released again, the
//     archive record names it, legacy stays;
//   - through all of it, every object of the team's keeps its
//     resourceVersion, and its pod its uid.
func stepAdoption(t *testing.T, w *walk) {
	const name = "iota"
	legacy := "legacy-" + fmt.Sprint(time.Now().UnixNano()%100000)
	own := seedLegacy(t, w, legacy)
	before := w.resourceVersions(t, own)
	labelsBefore := w.namespaceLabels(t, legacy)

	entry := `{"name":"legacy","pods":2,"cpu":"500m","adopt":{"namespace":"` + legacy + `"}}`
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"pods": int64(4), "cpu": "1", "owners": []any{map[string]any{"kind": "User", "name": "ann"}},
			"namespaces": []any{mustJSONMap(t, entry)}},
	}}
	ts, err := w.dyn.Resource(teamSpaces).Create(w.ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating TeamSpace %s: %v", name, err)
	}
	uid := string(ts.GetUID())
	t.Cleanup(func() {
		_ = w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{})
		_ = w.kube.CoreV1().Namespaces().Delete(w.ctx, legacy, metav1.DeleteOptions{})
	})

	// The plan, and nothing written in legacy.
	w.poll(t, name+" shows the plan for "+legacy, func() bool {
		r, _ := w.readyReason(name)
		return w.observedCurrent(name) && r == v1alpha1.ReasonAdoptionPlanned
	})
	plan := w.adoptionStatus(t, name, legacy)
	w.evidence(t, "adoption-plan", plan)
	if plan["confirmed"] != false || !strings.Contains(fmt.Sprint(plan["confirm"]), "kubectl label namespace "+legacy+" "+v1alpha1.AdoptLabel+"="+name) ||
		!strings.Contains(fmt.Sprint(plan["own"]), "RoleBinding deployers") || !strings.Contains(fmt.Sprint(plan["podSecurity"]), "found enforce=privileged") ||
		plan["share"] != "pods=2, requests.cpu=500m" || !strings.HasPrefix(fmt.Sprint(plan["use"]), "pods 1/2") {
		t.Errorf("the plan says %v", plan)
	}
	if lr, err := w.kube.CoreV1().LimitRanges(legacy).List(w.ctx, metav1.ListOptions{}); err != nil || len(lr.Items) != 0 {
		t.Errorf("LimitRanges in %s before the confirmation: %v %v", legacy, lr, err)
	}
	if got := w.namespaceLabels(t, legacy); !maps.Equal(got, labelsBefore) {
		t.Errorf("%s's labels changed before the confirmation: %v, were %v", legacy, got, labelsBefore)
	}

	// The owner may change the entry's share but not what it adopts, nor
	// label a namespace to claim it.
	ann, err := dynamic.NewForConfig(w.as("ann"))
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(entry, legacy, "elsewhere", 1)
	_, err = ann.Resource(teamSpaces).Patch(w.ctx, name, types.MergePatchType, []byte(`{"spec":{"namespaces":[`+other+`]}}`), metav1.PatchOptions{})
	if err == nil || !strings.Contains(err.Error(), "teamspace-adopt") {
		t.Errorf("the owner pointing adopt elsewhere: %v, want refused by teamspace-adopt", err)
	}
	annKube, err := kubernetes.NewForConfig(w.as("ann"))
	if err != nil {
		t.Fatal(err)
	}
	claim := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, v1alpha1.AdoptLabel, name)
	if _, err := annKube.CoreV1().Namespaces().Patch(w.ctx, legacy, types.MergePatchType, []byte(claim), metav1.PatchOptions{}); err == nil {
		t.Errorf("the owner confirmed the adoption of %s herself", legacy)
	}

	// Confirmed by the platform team (the admin).
	adopted := func() {
		t.Helper()
		w.labelNamespace(t, legacy, v1alpha1.AdoptLabel, name)
		w.poll(t, name+" Ready with "+legacy+" adopted", func() bool { return w.observedCurrent(name) && w.ready(name) })
		q, ok := w.quota(legacy)
		if !ok || hardPods(q.Spec.Hard) != "2" || q.Spec.Hard.Name(corev1.ResourceRequestsCPU, "").String() != "500m" {
			t.Errorf("team-quota in %s: %v %v", legacy, ok, q)
		}
		if _, err := w.kube.CoreV1().LimitRanges(legacy).Get(w.ctx, "team-defaults", metav1.GetOptions{}); err != nil {
			t.Errorf("team-defaults in %s: %v", legacy, err)
		}
		if _, err := w.kube.RbacV1().RoleBindings(legacy).Get(w.ctx, "team-owners", metav1.GetOptions{}); err != nil {
			t.Errorf("team-owners in %s: %v", legacy, err)
		}
		if _, err := w.kube.NetworkingV1().NetworkPolicies(legacy).Get(w.ctx, "team-isolation", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("team-isolation in %s before adopt.enforce: %v", legacy, err)
		}
		ns, _ := w.namespace(legacy)
		want := map[string]string{v1alpha1.TeamSpaceLabel: "", "pod-security.kubernetes.io/warn": "baseline", "pod-security.kubernetes.io/audit": "baseline",
			"pod-security.kubernetes.io/enforce": "privileged"}
		for k, v := range want {
			if ns.Labels[k] != v {
				t.Errorf("%s's label %s=%q, want %q (the platform's policies wait for adopt.enforce)", legacy, k, ns.Labels[k], v)
			}
		}
		if len(ns.OwnerReferences) > 0 {
			t.Errorf("%s has ownerReferences %v: an adopted namespace is never a child", legacy, ns.OwnerReferences)
		}
		w.evidence(t, "adopted-"+fmt.Sprint(time.Now().UnixNano()), map[string]any{"labels": ns.Labels, "annotations": ns.Annotations, "status": w.adoptionStatus(t, name, legacy)})
	}
	released := func(what string) {
		t.Helper()
		w.poll(t, legacy+" released ("+what+")", func() bool {
			_, quota := w.quota(legacy)
			_, err := w.kube.CoreV1().LimitRanges(legacy).Get(w.ctx, "team-defaults", metav1.GetOptions{})
			return !quota && apierrors.IsNotFound(err) && maps.Equal(w.namespaceLabels(t, legacy), w.withAdoptLabel(labelsBefore, name))
		})
		if _, err := w.kube.RbacV1().RoleBindings(legacy).Get(w.ctx, "team-owners", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("team-owners in %s after release (%s): %v", legacy, what, err)
		}
		ns, _ := w.namespace(legacy)
		if _, ok := ns.Annotations["platform.labhub.io/adopt-found"]; ok {
			t.Errorf("%s keeps annotation adopt-found after release (%s)", legacy, what)
		}
	}
	adopted()
	if diff := w.changedVersions(t, own, before); diff != "" {
		t.Errorf("adoption changed the team's own objects: %s", diff)
	}

	// Nothing tightened before adopt.enforce: the owner's privileged pod
	// is admitted (dry run); once the platform team raises it, legacy is
	// held as team-iota is: refused, isolated, labelled.
	if err := w.privilegedPod(t, "ann", legacy); err != nil {
		t.Errorf("the owner's privileged pod in %s before adopt.enforce: %v, want admitted (enforce privileged as found)", legacy, err)
	}
	enforced := strings.Replace(entry, `"adopt":{`, `"adopt":{"enforce":true,`, 1)
	w.patchTeamSpace(t, name, `{"spec":{"namespaces":[`+enforced+`]}}`)
	w.poll(t, name+" Ready with "+legacy+" enforced", func() bool {
		ns, _ := w.namespace(legacy)
		return w.observedCurrent(name) && w.ready(name) && ns.Labels[v1alpha1.TeamSpaceLabel] == name &&
			ns.Labels["pod-security.kubernetes.io/enforce"] == "baseline" && ns.Labels[v1alpha1.NetworkIsolationLabel] == "true"
	})
	if _, err := w.kube.NetworkingV1().NetworkPolicies(legacy).Get(w.ctx, "team-isolation", metav1.GetOptions{}); err != nil {
		t.Errorf("team-isolation in %s with adopt.enforce: %v", legacy, err)
	}
	if err := w.privilegedPod(t, "ann", legacy); err == nil || !strings.Contains(err.Error(), "baseline") {
		t.Errorf("the owner's privileged pod in %s with adopt.enforce: %v, want refused by Pod Security baseline", legacy, err)
	}
	if diff := w.changedVersions(t, own, before); diff != "" {
		t.Errorf("adopt.enforce changed the team's own objects: %s", diff)
	}

	// Released by taking the entry off (the platform team).
	w.patchTeamSpace(t, name, `{"spec":{"namespaces":null}}`)
	released("entry taken off")
	if diff := w.changedVersions(t, own, before); diff != "" {
		t.Errorf("release changed the team's own objects: %s", diff)
	}

	// Taken in again (still labelled), then the TeamSpace deleted.
	w.patchTeamSpace(t, name, `{"spec":{"namespaces":[`+entry+`]}}`)
	adopted()
	if err := w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, name+" gone", func() bool { return w.gone(name) })
	released("TeamSpace deleted")
	if _, ok := w.namespace(legacy); !ok {
		t.Fatalf("namespace %s is gone with TeamSpace %s", legacy, name)
	}
	if diff := w.changedVersions(t, own, before); diff != "" {
		t.Errorf("deleting the TeamSpace changed the team's own objects: %s", diff)
	}
	where, rec := w.findRecord(t, uid)
	if rec == nil || fmt.Sprint(rec["released"]) != "["+legacy+"]" {
		t.Errorf("archive record of %s (%s): %v, want released [%s]", name, where, rec, legacy)
	}
	w.evidence(t, "adoption-record", rec)

	// The engine gone: iota made again (legacy is still labelled for it,
	// so it is adopted at once), the engine stopped, the TeamSpace removed
	// without its finalizer (as a CRD reinstall without the engine would).
	// The garbage collector deletes iota's objects in legacy (they are its
	// children); legacy and everything of the team's stay: nothing of it
	// ever depended on the engine. Started again, the engine puts the
	// labels back.
	obj.SetResourceVersion("")
	if _, err := w.dyn.Resource(teamSpaces).Create(w.ctx, obj, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating TeamSpace %s again: %v", name, err)
	}
	w.poll(t, name+" Ready with "+legacy+" adopted again", func() bool { return w.observedCurrent(name) && w.ready(name) })
	w.engine(t, "stop")
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			w.engine(t, "start")
		}
	})
	w.removeFinalizer(t, name, engineFinalizer)
	if err := w.dyn.Resource(teamSpaces).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	w.poll(t, name+"'s objects in "+legacy+" collected without the engine", func() bool {
		_, quota := w.quota(legacy)
		_, err := w.kube.CoreV1().LimitRanges(legacy).Get(w.ctx, "team-defaults", metav1.GetOptions{})
		return w.gone(name) && !quota && apierrors.IsNotFound(err)
	})
	if _, ok := w.namespace(legacy); !ok {
		t.Fatalf("namespace %s is gone with TeamSpace %s (engine stopped)", legacy, name)
	}
	if diff := w.changedVersions(t, own, before); diff != "" {
		t.Errorf("the TeamSpace gone without the engine changed the team's own objects: %s", diff)
	}
	w.engine(t, "start")
	restarted = true
	released("TeamSpace gone while the engine was stopped")
}

// teamObject is one object of the team's in an adopted namespace.
type teamObject struct{ kind, name string }

// seedLegacy makes namespace ns as a team's existing one and returns its
// objects, once each has settled (the controllers are done with it).
func seedLegacy(t *testing.T, w *walk, ns string) []teamObject {
	t.Helper()
	k := w.kube
	ctx := w.ctx
	create := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("creating %s in %s: %v", what, ns, err)
		}
	}
	_, err := k.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"pod-security.kubernetes.io/enforce": "privileged"}}}, metav1.CreateOptions{})
	create("the namespace", err)
	_, err = k.CoreV1().ResourceQuotas(ns).Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "compute"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10"), corev1.ResourceRequestsCPU: resource.MustParse("2")}}}, metav1.CreateOptions{})
	create("ResourceQuota compute", err)
	one := int32(1)
	labels := map[string]string{"app": "ledger"}
	_, err = k.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "ledger"},
		Spec: appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "ledger", Image: "registry.invalid/ledger:1",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
			}}}}}}, metav1.CreateOptions{})
	create("Deployment ledger", err)
	_, err = k.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "ledger-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{})
	create("PVC ledger-data", err)
	_, err = k.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "deployers"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "deployer", Namespace: ns}}}, metav1.CreateOptions{})
	create("RoleBinding deployers", err)
	_, err = k.NetworkingV1().NetworkPolicies(ns).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "allow-same-namespace"},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}}, metav1.CreateOptions{})
	create("NetworkPolicy allow-same-namespace", err)

	// Its pod exists and the quota counts it; then nothing moves for 2 s.
	w.poll(t, "the ledger pod counted in "+ns, func() bool {
		q, err := k.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
		return err == nil && q.Status.Used.Name(corev1.ResourcePods, "").String() == "1"
	})
	pods, err := k.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the ledger pod: %v %v", pods, err)
	}
	objs := []teamObject{{"Deployment", "ledger"}, {"PersistentVolumeClaim", "ledger-data"}, {"ResourceQuota", "compute"},
		{"RoleBinding", "deployers"}, {"NetworkPolicy", "allow-same-namespace"}, {"Pod", pods.Items[0].Name}}
	last := ""
	stableSince := time.Now()
	w.poll(t, "the team's objects in "+ns+" settled", func() bool {
		now := fmt.Sprint(w.resourceVersionsIn(t, ns, objs))
		if now != last {
			last, stableSince = now, time.Now()
		}
		return time.Since(stableSince) > 2*time.Second
	})
	for i := range objs {
		objs[i].name = ns + "/" + objs[i].name
	}
	return objs
}

// resourceVersions are the team's objects' resourceVersions (and the pod's
// uid), by "Kind namespace/name".
func (w *walk) resourceVersions(t *testing.T, objs []teamObject) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		ns, name, _ := strings.Cut(o.name, "/")
		maps.Copy(out, w.resourceVersionsIn(t, ns, []teamObject{{o.kind, name}}))
	}
	return out
}

func (w *walk) resourceVersionsIn(t *testing.T, ns string, objs []teamObject) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, o := range objs {
		var m metav1.Object
		var err error
		switch o.kind {
		case "Deployment":
			m, err = w.kube.AppsV1().Deployments(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		case "PersistentVolumeClaim":
			m, err = w.kube.CoreV1().PersistentVolumeClaims(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		case "ResourceQuota":
			m, err = w.kube.CoreV1().ResourceQuotas(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		case "RoleBinding":
			m, err = w.kube.RbacV1().RoleBindings(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		case "NetworkPolicy":
			m, err = w.kube.NetworkingV1().NetworkPolicies(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		case "Pod":
			m, err = w.kube.CoreV1().Pods(ns).Get(w.ctx, o.name, metav1.GetOptions{})
		}
		key := o.kind + " " + ns + "/" + o.name
		if err != nil {
			out[key] = "missing: " + err.Error()
			continue
		}
		out[key] = m.GetResourceVersion() + " " + string(m.GetUID())
	}
	return out
}

// changedVersions says which of the team's objects changed since before
// ("" when none did).
func (w *walk) changedVersions(t *testing.T, objs []teamObject, before map[string]string) string {
	t.Helper()
	now := w.resourceVersions(t, objs)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(before)) {
		if now[k] != before[k] {
			out = append(out, fmt.Sprintf("%s: %s, was %s", k, now[k], before[k]))
		}
	}
	return strings.Join(out, "; ")
}

// namespaceLabels are a namespace's labels.
func (w *walk) namespaceLabels(t *testing.T, name string) map[string]string {
	t.Helper()
	ns, ok := w.namespace(name)
	if !ok {
		t.Fatalf("namespace %s is gone", name)
	}
	return ns.Labels
}

// withAdoptLabel is labels with the adopt label naming teamspace: what a
// released namespace keeps (the label is the platform team's to remove).
func (w *walk) withAdoptLabel(labels map[string]string, teamspace string) map[string]string {
	out := maps.Clone(labels)
	out[v1alpha1.AdoptLabel] = teamspace
	return out
}

// labelNamespace sets one label of a namespace, as the admin.
func (w *walk) labelNamespace(t *testing.T, name, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}}}`, key, value)
	if _, err := w.kube.CoreV1().Namespaces().Patch(w.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("labelling namespace %s %s=%s: %v", name, key, value, err)
	}
}

// adoptionStatus is status.namespaces[].adoption of TeamSpace name's entry
// for namespace ns.
func (w *walk) adoptionStatus(t *testing.T, name, ns string) map[string]any {
	t.Helper()
	entries, _, _ := unstructured.NestedSlice(w.mustTeamSpace(t, name).Object, "status", "namespaces")
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["name"] == ns {
			a, _ := m["adoption"].(map[string]any)
			return a
		}
	}
	t.Fatalf("TeamSpace %s's status.namespaces has no %s: %v", name, ns, entries)
	return nil
}

func mustJSONMap(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// privilegedPod is a server dry run of a privileged pod created by user
// in namespace ns.
func (w *walk) privilegedPod(t *testing.T, user, ns string) error {
	t.Helper()
	k, err := kubernetes.NewForConfig(w.as(user))
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "privileged"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "c", Image: "registry.invalid/c:1", SecurityContext: &corev1.SecurityContext{Privileged: &yes},
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
	}}}}
	_, err = k.CoreV1().Pods(ns).Create(w.ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	return err
}
