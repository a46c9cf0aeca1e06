// Package benchutil holds what the programs under hack/bench share: the
// client from $KUBECONFIG, the TeamSpace resource, and the statistics they
// print.
package benchutil

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TeamSpaces is the TeamSpace resource (crd.yaml).
var TeamSpaces = schema.GroupVersionResource{Group: "platform.labhub.io", Version: "v1alpha1", Resource: "teamspaces"}

// Clients are the typed and dynamic clients of one rest.Config. The
// benchmark's own client is never the bottleneck: QPS 1000, burst 2000.
type Clients struct {
	Config  *rest.Config
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// NewClients reads $KUBECONFIG (or the kubeconfig given). Unless foreign
// is set, it refuses a cluster hack/cluster.sh did not start (see
// ForeignClusterFlag).
func NewClients(kubeconfig string, foreign bool) (*Clients, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		return nil, fmt.Errorf("no kubeconfig: set KUBECONFIG (eval \"$(hack/up.sh env)\")")
	}
	if !foreign {
		if err := checkOwnCluster(kubeconfig); err != nil {
			return nil, err
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = 1000, 2000
	cfg.UserAgent = "teamspace-bench"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kube, Dynamic: dyn}, nil
}

// NewTeamSpace is a TeamSpace object.
func NewTeamSpace(name string, pods int64, cpu string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": TeamSpaces.Group + "/" + TeamSpaces.Version,
		"kind":       "TeamSpace",
		"metadata":   map[string]any{"name": name},
		"spec":       map[string]any{"pods": pods, "cpu": cpu},
	}}
}

// Ready reports whether a TeamSpace has Ready=True for its current
// generation (status.observedGeneration, written by the engine).
func Ready(ts *unstructured.Unstructured) bool {
	og, _, _ := unstructured.NestedInt64(ts.Object, "status", "observedGeneration")
	if og != ts.GetGeneration() {
		return false
	}
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// Stats summarises durations.
type Stats struct {
	N                            int
	Min, P50, P90, P99, Max, Avg time.Duration
}

// Summarise computes nearest-rank percentiles.
func Summarise(ds []time.Duration) Stats {
	if len(ds) == 0 {
		return Stats{}
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p/100*float64(len(s)))) - 1
		if i < 0 {
			i = 0
		}
		return s[i]
	}
	return Stats{N: len(s), Min: s[0], P50: rank(50), P90: rank(90), P99: rank(99), Max: s[len(s)-1], Avg: sum / time.Duration(len(s))}
}

// Ms prints a duration in milliseconds with one decimal.
func Ms(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

func (s Stats) String() string {
	return fmt.Sprintf("n=%d p50_ms=%s p90_ms=%s min_ms=%s max_ms=%s", s.N, Ms(s.P50), Ms(s.P90), Ms(s.Min), Ms(s.Max))
}

// List prints every sample in milliseconds, for the log.
func List(ds []time.Duration) string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = Ms(d)
	}
	return strings.Join(out, " ")
}

// RunShell runs cmd with bash, its output on stderr (the RESULT lines are
// on stdout): how a bench stops and starts the engine.
func RunShell(cmd string) error {
	c := exec.Command("bash", "-c", cmd)
	c.Stdout, c.Stderr = os.Stderr, os.Stderr
	return c.Run()
}
