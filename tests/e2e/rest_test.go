package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// What "at rest" means to the walkthrough (issue #74): the TeamSpace, every
// object in its namespace of a kind its sync makes or reads, its
// cluster-scoped children, and the templates' bundle (a related object of
// every TeamSpace) all unchanged, and the engine calling no hook. Step 3
// watched three of these, and opened its window while the bundle of the
// CompositeController step 1 deleted was still there, waiting for the
// garbage collector (which sees a kind installed after it started only from
// its next discovery, every 30 s): the window saw the bundle go, and two
// syncs of alpha for it.

// restKinds are the kinds of a team namespace's objects the TeamSpace's
// sync makes or reads (children, copies of templates, what team-objects
// counts).
var restKinds = []schema.GroupVersionResource{
	{Version: "v1", Resource: "resourcequotas"},
	{Version: "v1", Resource: "limitranges"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "secrets"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
}

// clusterRestKinds are the kinds of a TeamSpace's cluster-scoped children,
// found by its label.
var clusterRestKinds = []schema.GroupVersionResource{
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
}

var secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// restState is the resourceVersion (and uid) of every object TeamSpace
// name's sync reads, by "resource namespace/name"; an object missing is
// recorded as missing.
func (w *walk) restState(t *testing.T, name string) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(key string, o metav1.Object, err error) {
		switch {
		case apierrors.IsNotFound(err):
			out[key] = "missing"
		case err != nil:
			t.Fatalf("reading %s: %v", key, err)
		default:
			out[key] = o.GetResourceVersion() + " " + string(o.GetUID())
		}
	}
	ts, err := w.teamSpace(name)
	add("teamspaces "+name, ts, err)
	ns := teamspace.NamespaceName(name)
	nsObj, err := w.kube.CoreV1().Namespaces().Get(w.ctx, ns, metav1.GetOptions{})
	add("namespaces "+ns, nsObj, err)
	bundle, err := w.dyn.Resource(secretsGVR).Namespace(teamspace.TemplatesNamespace).Get(w.ctx, teamspace.TemplatesBundleName, metav1.GetOptions{})
	add("secrets "+teamspace.TemplatesNamespace+"/"+teamspace.TemplatesBundleName, bundle, err)
	for _, gvr := range restKinds {
		list, err := w.dyn.Resource(gvr).Namespace(ns).List(w.ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing %s in %s: %v", gvr.Resource, ns, err)
		}
		for _, o := range list.Items {
			add(gvr.Resource+" "+ns+"/"+o.GetName(), &o, nil)
		}
	}
	for _, gvr := range clusterRestKinds {
		list, err := w.dyn.Resource(gvr).List(w.ctx, metav1.ListOptions{LabelSelector: v1alpha1.TeamSpaceLabel + "=" + name})
		if err != nil {
			t.Fatalf("listing %s of %s: %v", gvr.Resource, name, err)
		}
		for _, o := range list.Items {
			add(gvr.Resource+" "+o.GetName(), &o, nil)
		}
	}
	return out
}

// changedState says what changed from before to after ("" when nothing).
func changedState(before, after map[string]string) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(mergeKeys(before, after))) {
		if before[k] != after[k] {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, before[k], after[k]))
		}
	}
	return strings.Join(out, "; ")
}

func mergeKeys(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// settle waits until TeamSpace name is at rest: the templates' bundle is
// the current CompositeController's, and neither any object its sync reads
// nor the hook's call counts (every hook's, the DecoratorControllers'
// included) has changed for quiet. It returns how long that took.
func (w *walk) settle(t *testing.T, name string, quiet time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	w.poll(t, "the templates' bundle, made by the current CompositeController", w.bundleCurrent)
	last, since := "", time.Now()
	w.poll(t, fmt.Sprintf("%s and everything its sync reads unchanged for %s, the hook uncalled", name, quiet), func() bool {
		now := fmt.Sprint(w.restState(t, name), w.hookCallsByHook(t))
		if now != last {
			last, since = now, time.Now()
		}
		return time.Since(since) >= quiet
	})
	return time.Since(start) - quiet
}

// bundleCurrent reports whether the templates' bundle is there, not
// going, and controlled by the CompositeController there now.
func (w *walk) bundleCurrent() bool {
	cc, err := w.dyn.Resource(compositeControllers).Get(w.ctx, controllerName, metav1.GetOptions{})
	if err != nil {
		return false
	}
	return w.bundleOwnedBy(cc.GetUID())
}

// bundleOwnedBy reports whether the templates' bundle is there, not going,
// and controlled by uid.
func (w *walk) bundleOwnedBy(uid types.UID) bool {
	b, err := w.dyn.Resource(secretsGVR).Namespace(teamspace.TemplatesNamespace).Get(w.ctx, teamspace.TemplatesBundleName, metav1.GetOptions{})
	if err != nil || b.GetDeletionTimestamp() != nil {
		return false
	}
	owner := metav1.GetControllerOf(b)
	return owner != nil && owner.UID == uid
}

// hookCalls is how many calls hook has answered (every code).
func (w *walk) hookCalls(t *testing.T, hook string) float64 {
	t.Helper()
	var n float64
	for series, v := range w.hookCallsByHook(t) {
		if strings.Contains(series, `hook="`+hook+`"`) {
			n += v
		}
	}
	return n
}

// stepBundleComesBack: the templates' bundle comes back whenever it is
// gone, here after the CompositeController was replaced while the old
// one's bundle was still there. A finalizer holds that bundle as the
// garbage collector's late discovery did (issue #74): the new controller's
// DecoratorController syncs, its create meets AlreadyExists (the engine
// swallows it); then the old bundle goes, and the event names the old
// controller, which nothing syncs. Without a retry while the bundle is
// missing (teamspace.BundleMissingRetrySeconds) it stayed gone for hours,
// and every TeamSpace made meanwhile got none of the platform's templates.
func stepBundleComesBack(t *testing.T, w *walk) {
	const hold = "example.com/hold"
	bundles := w.dyn.Resource(secretsGVR).Namespace(teamspace.TemplatesNamespace)
	setFinalizers := func(fins string) error {
		_, err := bundles.Patch(w.ctx, teamspace.TemplatesBundleName, types.MergePatchType,
			[]byte(`{"metadata":{"finalizers":`+fins+`}}`), metav1.PatchOptions{})
		return err
	}
	if !w.bundleCurrent() {
		t.Fatal("the templates' bundle is not the current CompositeController's before the step")
	}
	if err := setFinalizers(`["` + hold + `"]`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := setFinalizers("null"); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("releasing the bundle: %v", err)
		}
	})

	// The CompositeController replaced: a new uid.
	w.deleteController(t)
	synced := w.hookCalls(t, "templates")
	w.applyController(t)
	cc, err := w.dyn.Resource(compositeControllers).Get(w.ctx, controllerName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The new controller's bundle was asked for while the old one is
	// there, and the collector has seen the old one's owner go.
	w.poll(t, "the templates' DecoratorController to sync the new CompositeController", func() bool {
		return w.hookCalls(t, "templates") > synced
	})
	w.poll(t, "the garbage collector to delete the old bundle", func() bool {
		b, err := bundles.Get(w.ctx, teamspace.TemplatesBundleName, metav1.GetOptions{})
		return err == nil && b.GetDeletionTimestamp() != nil
	})
	time.Sleep(time.Second) // the engine's create of the new bundle, refused

	released := time.Now()
	if err := setFinalizers("null"); err != nil {
		t.Fatal(err)
	}
	back := w.pollWithin(t, 30*time.Second, "the templates' bundle made again after the old one went (the CompositeController replaced): every TeamSpace is without the platform's templates until it is",
		func() bool { return w.bundleOwnedBy(cc.GetUID()) })
	took := back.Sub(released)
	w.poll(t, "alpha synced for the new bundle", func() bool { return w.observedCurrent("alpha") && w.ready("alpha") })
	w.evidence(t, "bundle.json", map[string]any{"controller_uid": cc.GetUID(), "bundle_back_seconds": seconds(took)})
}
