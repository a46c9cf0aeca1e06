// Command childdrift measures how fast the running engine + hook repair the
// children that came after namespace and quota (LimitRange team-defaults,
// RoleBinding team-owners, NetworkPolicy team-isolation), through one watch
// per child in this one process, as hack/bench/drift does for the quota:
//   - restore: the child is deleted; time until a new one is seen (ADDED);
//   - revert: the child is edited (LimitRange defaultRequest.cpu 900m, a
//     RoleBinding subject added, NetworkPolicy ingress opened to all); time
//     until the watch shows it back as it was.
//
// Before each repetition the TeamSpace is Ready for its generation and a
// -settle pause has passed.
//
//	eval "$(hack/up.sh env)"; cd hack && go run ./bench/childdrift -reps 20
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
)

// child is one measured child type: its resource, name, the fields the hook
// owns and the hand edit of revert.
type child struct {
	label     string
	gvr       schema.GroupVersionResource
	name      string
	content   []string // top-level field holding what the hook owns
	patchType types.PatchType
	patch     string
}

var children = []child{
	{"limitrange", schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}, "team-defaults", []string{"spec"},
		types.JSONPatchType, `[{"op":"replace","path":"/spec/limits/0/defaultRequest/cpu","value":"900m"}]`},
	{"rolebinding", schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "team-owners", []string{"subjects"},
		types.JSONPatchType, `[{"op":"add","path":"/subjects/-","value":{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"mallory"}}]`},
	{"networkpolicy", schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, "team-isolation", []string{"spec"},
		types.MergePatchType, `{"spec":{"ingress":[{}]}}`},
}

func main() {
	name := flag.String("name", "bench-childdrift", "TeamSpace to use (created if missing, deleted at the end)")
	reps := flag.Int("reps", 20, "repetitions of each measurement")
	settle := flag.Duration("settle", 300*time.Millisecond, "pause after the state has settled, before each repetition")
	timeout := flag.Duration("timeout", 30*time.Second, "give up on one repetition after this long")
	label := flag.String("label", "", "tag printed on the RESULT lines")
	foreign := benchutil.ForeignClusterFlag()
	flag.Parse()

	c, err := benchutil.NewClients("", *foreign)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	tsClient := c.Dynamic.Resource(benchutil.TeamSpaces)
	ts := benchutil.NewTeamSpace(*name, 3, "500m")
	ts.Object["spec"].(map[string]any)["owners"] = []any{map[string]any{"kind": "Group", "name": "devs"}}
	if _, err := tsClient.Create(ctx, ts, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		log.Fatal(err)
	}
	defer func() { _ = tsClient.Delete(context.Background(), *name, metav1.DeleteOptions{}) }()
	ns := "team-" + *name
	ready := func() error {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			obj, err := tsClient.Get(ctx, *name, metav1.GetOptions{})
			if err == nil && benchutil.Ready(obj) {
				time.Sleep(*settle)
				return nil
			}
			time.Sleep(20 * time.Millisecond)
		}
		return fmt.Errorf("TeamSpace %s not Ready", *name)
	}
	if err := ready(); err != nil {
		log.Fatal(err)
	}
	for _, ch := range children {
		res := c.Dynamic.Resource(ch.gvr).Namespace(ns)
		orig, err := res.Get(ctx, ch.name, metav1.GetOptions{})
		if err != nil {
			log.Fatal(err)
		}
		want := owned(orig, ch)
		events := watchOne(ctx, res, ch.name)
		results := map[string][]time.Duration{}
		for _, kind := range []string{"restore", "revert"} {
			for i := 0; i < *reps; i++ {
				if err := ready(); err != nil {
					log.Fatal(err)
				}
				drain(events)
				start := time.Now()
				if kind == "restore" {
					err = res.Delete(ctx, ch.name, metav1.DeleteOptions{})
				} else {
					_, err = res.Patch(ctx, ch.name, ch.patchType, []byte(ch.patch), metav1.PatchOptions{})
				}
				if err != nil {
					log.Fatal(err)
				}
				edited := false
				took, err := await(events, *timeout, func(t watch.EventType, o *unstructured.Unstructured) bool {
					if kind == "restore" {
						return t == watch.Added
					}
					same := reflect.DeepEqual(owned(o, ch), want)
					if !same {
						edited = true
					}
					return edited && same
				}, start)
				if err != nil {
					log.Fatalf("%s %s #%d: %v", ch.label, kind, i+1, err)
				}
				fmt.Fprintf(os.Stderr, "%s %s #%d: %s ms\n", ch.label, kind, i+1, benchutil.Ms(took))
				results[kind] = append(results[kind], took)
			}
		}
		for _, kind := range []string{"restore", "revert"} {
			fmt.Printf("RESULT drift %s %s %s%s\n", ch.label, kind, benchutil.Summarise(results[kind]), tag(*label))
			fmt.Printf("SAMPLES drift %s %s %s\n", ch.label, kind, benchutil.List(results[kind]))
		}
	}
}

func tag(label string) string {
	if label == "" {
		return ""
	}
	return " config=" + label
}

func owned(o *unstructured.Unstructured, ch child) string {
	b, _ := json.Marshal(o.Object[ch.content[0]])
	return string(b)
}

func watchOne(ctx context.Context, res dynamic.ResourceInterface, name string) <-chan watch.Event {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := res.List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		log.Fatal(err)
	}
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, list.GetResourceVersion(), &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return res.Watch(ctx, o)
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	return rw.ResultChan()
}

func drain(events <-chan watch.Event) {
	for {
		select {
		case <-events:
		default:
			return
		}
	}
}

func await(events <-chan watch.Event, timeout time.Duration, done func(watch.EventType, *unstructured.Unstructured) bool, start time.Time) (time.Duration, error) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return 0, fmt.Errorf("watch closed")
			}
			o, isObj := ev.Object.(*unstructured.Unstructured)
			if !isObj {
				return 0, fmt.Errorf("watch error: %v", ev.Object)
			}
			if done(ev.Type, o) {
				return time.Since(start), nil
			}
		case <-timer.C:
			return 0, fmt.Errorf("nothing within %s", timeout)
		}
	}
}
