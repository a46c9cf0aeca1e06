package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// live reads and writes objects through client-go instead of kubectl, for
// the loops that poll and the helpers that make hundreds of requests: a
// kubectl process costs ~0.2 s of CPU, a request over a kept connection
// next to nothing, and with the tests running side by side on two cores
// the kubectls were what the CPU did (#74).
type live struct {
	cfg    *rest.Config
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
	users  sync.Map // "user\x00group..." → *live: as's clients, built once
}

// liveRef names one object.
type liveRef struct{ apiVersion, kind, namespace, name string }

func (r liveRef) String() string {
	if r.namespace == "" {
		return r.kind + " " + r.name
	}
	return r.kind + " " + r.namespace + "/" + r.name
}

// newLive builds the clients once per test binary, from the KUBECONFIG
// controlplane.Main set.
var newLive = sync.OnceValues(func() (*live, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 200, 400
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &live{cfg: cfg, dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
})

// liveClient is newLive that fails the test on error.
func liveClient(t testing.TB) *live {
	t.Helper()
	l, err := newLive()
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// as is l acting as user in groups, by impersonation, as kubectl --as
// and --as-group (the API server adds a ServiceAccount's groups when none
// are given).
func (l *live) as(user string, groups ...string) (*live, error) {
	key := strings.Join(append([]string{user}, groups...), "\x00")
	if c, ok := l.users.Load(key); ok {
		return c.(*live), nil
	}
	cfg := rest.CopyConfig(l.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	c, _ := l.users.LoadOrStore(key, &live{cfg: cfg, dyn: dyn, mapper: l.mapper})
	return c.(*live), nil
}

// resource is the client of r's kind, in r's namespace if it has one.
func (l *live) resource(r liveRef) (dynamic.ResourceInterface, error) {
	gv, err := schema.ParseGroupVersion(r.apiVersion)
	if err != nil {
		return nil, err
	}
	m, err := l.mapper.RESTMapping(gv.WithKind(r.kind).GroupKind(), gv.Version)
	if meta.IsNoMatchError(err) {
		// A kind installed after discovery was cached (the CRD, which
		// a test may delete and put back): discover again, once.
		l.mapper.Reset()
		m, err = l.mapper.RESTMapping(gv.WithKind(r.kind).GroupKind(), gv.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if r.namespace == "" {
		return l.dyn.Resource(m.Resource), nil
	}
	return l.dyn.Resource(m.Resource).Namespace(r.namespace), nil
}

// get reads one object; apierrors.IsNotFound tells a missing one.
func (l *live) get(r liveRef) (*unstructured.Unstructured, error) {
	res, err := l.resource(r)
	if err != nil {
		return nil, err
	}
	return res.Get(context.Background(), r.name, metav1.GetOptions{})
}

// The writes are those kubectl makes of create, create --dry-run=server and
// replace: strict field validation (kubectl's default, --validate=strict),
// so that a field the API server does not know fails as it would there.
const strict = metav1.FieldValidationStrict

// create creates obj (its apiVersion, kind, namespace and name say
// where), or only asks the API server whether it would (dryRun): every
// admission step runs, nothing is stored.
func (l *live) create(obj map[string]any, dryRun bool) error {
	u := &unstructured.Unstructured{Object: obj}
	res, err := l.resource(refOf(u))
	if err != nil {
		return err
	}
	opts := metav1.CreateOptions{FieldValidation: strict}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	_, err = res.Create(context.Background(), u.DeepCopy(), opts)
	return err
}

// replace writes obj over the stored object as kubectl replace does: a
// full update, with the stored resourceVersion when obj has none.
func (l *live) replace(obj map[string]any) error {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	res, err := l.resource(refOf(u))
	if err != nil {
		return err
	}
	if u.GetResourceVersion() == "" {
		cur, err := res.Get(context.Background(), u.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		u.SetResourceVersion(cur.GetResourceVersion())
	}
	_, err = res.Update(context.Background(), u, metav1.UpdateOptions{FieldValidation: strict})
	return err
}

// delete deletes one object without waiting (kubectl delete
// --ignore-not-found --wait=false: its dependents in the background).
func (l *live) delete(r liveRef) error {
	res, err := l.resource(r)
	if err != nil {
		return err
	}
	err = res.Delete(context.Background(), r.name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// list lists the objects of a kind (apiVersion, kind) in namespace (""
// for all) that selector (a label selector, "" for all) selects; each
// item carries its apiVersion and kind.
func (l *live) list(apiVersion, kind, namespace, selector string) ([]unstructured.Unstructured, error) {
	res, err := l.resource(liveRef{apiVersion: apiVersion, kind: kind, namespace: namespace})
	if err != nil {
		return nil, err
	}
	list, err := res.List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// apply applies obj server-side as manager (kubectl apply --server-side
// --field-manager=manager: conflicts refused, not forced).
func (l *live) apply(obj map[string]any, manager string) error {
	u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
	res, err := l.resource(refOf(u))
	if err != nil {
		return err
	}
	_, err = res.Apply(context.Background(), u.GetName(), u, metav1.ApplyOptions{FieldManager: manager})
	return err
}

// mergePatch patches one object with a JSON merge patch (kubectl patch
// --type=merge).
func (l *live) mergePatch(r liveRef, patch []byte) error {
	res, err := l.resource(r)
	if err != nil {
		return err
	}
	_, err = res.Patch(context.Background(), r.name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// rawJSON is u as the API server sends it (kubectl get -o json).
func rawJSON(u *unstructured.Unstructured) json.RawMessage {
	b, _ := json.Marshal(u.Object)
	return b
}

// refOf names the object u is.
func refOf(u *unstructured.Unstructured) liveRef {
	return liveRef{apiVersion: u.GetAPIVersion(), kind: u.GetKind(), namespace: u.GetNamespace(), name: u.GetName()}
}
