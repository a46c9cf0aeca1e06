package cluster_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

// live reads objects through client-go instead of kubectl, for the loops
// that poll: a kubectl process costs tens of milliseconds of CPU, a GET
// over a kept connection next to nothing, and with the tests running side
// by side on two cores the polling kubectls were what the CPU did.
type live struct {
	dyn    dynamic.Interface
	mapper *restmapper.DeferredDiscoveryRESTMapper
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
	return &live{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))}, nil
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

// get reads one object; apierrors.IsNotFound tells a missing one.
func (l *live) get(r liveRef) (*unstructured.Unstructured, error) {
	gv, err := schema.ParseGroupVersion(r.apiVersion)
	if err != nil {
		return nil, err
	}
	m, err := l.mapper.RESTMapping(gv.WithKind(r.kind).GroupKind(), gv.Version)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r, err)
	}
	if r.namespace == "" {
		return l.dyn.Resource(m.Resource).Get(context.Background(), r.name, metav1.GetOptions{})
	}
	return l.dyn.Resource(m.Resource).Namespace(r.namespace).Get(context.Background(), r.name, metav1.GetOptions{})
}
