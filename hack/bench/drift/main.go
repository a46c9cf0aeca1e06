// Command drift measures how fast the running engine + hook undo drift of a
// TeamSpace's children, through one client-go watch per child in this one
// process (no kubectl start-up in the figures), for each child of -children:
//
//   - restore: the child is deleted; time until a new one, as desired, is
//     seen (ADDED);
//   - revert: the child is edited by hand (quota spec.hard.pods 99,
//     LimitRange defaultRequest.cpu 900m, a RoleBinding subject added,
//     NetworkPolicy ingress opened to all); time until the watch shows it
//     back as it was.
//
// Each repetition starts from a settled state (TeamSpace Ready for its
// generation, the quota controller's status.hard equal to spec.hard) and is
// timed from just before the delete/patch request is sent. The walkthrough
// (tests/e2e) times its repairs with the same watch (tests/watchtiming).
//
//	eval "$(hack/up.sh env)"; cd hack && go run ./bench/drift -reps 20 \
//	  -children quota,limitrange,rolebinding,networkpolicy
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
	"github.com/labhub/teamspace/tests/watchtiming"
)

const quotaName = "team-quota"

// child is one measured child type: its resource and name, the top-level
// field holding what the hook owns, and revert's hand edit.
type child struct {
	gvr       schema.GroupVersionResource
	name      string
	owned     string
	patchType types.PatchType
	patch     string
}

var children = map[string]child{
	"quota": {schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, quotaName, "spec",
		types.MergePatchType, `{"spec":{"hard":{"pods":"99"}}}`},
	"limitrange": {schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}, "team-defaults", "spec",
		types.JSONPatchType, `[{"op":"replace","path":"/spec/limits/0/defaultRequest/cpu","value":"900m"}]`},
	"rolebinding": {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, "team-owners", "subjects",
		types.JSONPatchType, `[{"op":"add","path":"/subjects/-","value":{"kind":"User","apiGroup":"rbac.authorization.k8s.io","name":"mallory"}}]`},
	"networkpolicy": {schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, "team-isolation", "spec",
		types.MergePatchType, `{"spec":{"ingress":[{}]}}`},
}

func main() {
	name := flag.String("name", "bench-drift", "TeamSpace to use (created if missing, deleted at the end unless -keep)")
	reps := flag.Int("reps", 20, "repetitions of each measurement")
	pods := flag.Int64("pods", 3, "spec.pods of the TeamSpace")
	settle := flag.Duration("settle", 300*time.Millisecond, "pause after the state has settled, before each repetition")
	timeout := flag.Duration("timeout", 30*time.Second, "give up on one repetition after this long")
	keep := flag.Bool("keep", false, "keep the TeamSpace at the end")
	label := flag.String("label", "", "tag printed on the RESULT lines (e.g. the engine flags)")
	kinds := flag.String("kinds", "restore,revert", "what to measure, comma-separated")
	only := flag.String("children", "quota", "children to break, comma-separated: quota, limitrange, rolebinding, networkpolicy")
	beforeCmd := flag.String("before-cmd", "", "shell command run once the state has settled, just before each break is sent (e.g. kill -9 the leading engine: the figure is then the failover)")
	foreign := benchutil.ForeignClusterFlag()
	flag.Parse()

	c, err := benchutil.NewClients("", *foreign)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	d := &drift{c: c, name: *name, ns: "team-" + *name, want: fmt.Sprint(*pods), settle: *settle, timeout: *timeout, beforeCmd: *beforeCmd}
	if err := d.setUp(ctx, *pods); err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer func() {
			_ = c.Dynamic.Resource(benchutil.TeamSpaces).Delete(context.Background(), *name, metav1.DeleteOptions{})
		}()
	}
	for _, which := range strings.Split(*only, ",") {
		ch, ok := children[which]
		if !ok {
			log.Fatalf("-children: unknown %q", which)
		}
		m, err := d.measure(ctx, ch)
		if err != nil {
			log.Fatal(err)
		}
		results := map[string][]time.Duration{}
		for _, kind := range strings.Split(*kinds, ",") {
			for i := 0; i < *reps; i++ {
				var took time.Duration
				var trace string
				switch kind {
				case "restore":
					took, trace, err = m.restore(ctx)
				case "revert":
					took, trace, err = m.revert(ctx)
				default:
					log.Fatalf("-kinds: unknown %q", kind)
				}
				if err != nil {
					log.Fatalf("%s %s #%d: %v", which, kind, i+1, err)
				}
				fmt.Fprintf(os.Stderr, "%s %s #%d: %s ms  events: %s\n", which, kind, i+1, benchutil.Ms(took), trace)
				results[kind] = append(results[kind], took)
			}
		}
		m.watch.Stop()
		for _, kind := range strings.Split(*kinds, ",") {
			fmt.Printf("RESULT drift %s %s %s%s\n", which, kind, benchutil.Summarise(results[kind]), tag(*label))
			fmt.Printf("SAMPLES drift %s %s %s\n", which, kind, benchutil.List(results[kind]))
		}
	}
}

func tag(label string) string {
	if label == "" {
		return ""
	}
	return " config=" + label
}

type drift struct {
	c       *benchutil.Clients
	name    string
	ns      string
	want    string
	settle  time.Duration
	timeout time.Duration
	// beforeCmd runs after prepare, before the clock starts (see -before-cmd).
	beforeCmd string
}

// setUp creates the TeamSpace (or sets its spec) and waits until it is
// Ready. It has owners, so that it has every namespaced child.
func (d *drift) setUp(ctx context.Context, pods int64) error {
	ts := d.c.Dynamic.Resource(benchutil.TeamSpaces)
	obj := benchutil.NewTeamSpace(d.name, pods, "500m")
	obj.Object["spec"].(map[string]any)["owners"] = []any{map[string]any{"kind": "Group", "name": "devs"}}
	_, err := ts.Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"spec":{"pods":%d,"cpu":"500m","owners":[{"kind":"Group","name":"devs"}]}}`, pods)
		_, err = ts.Patch(ctx, d.name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	if err != nil {
		return err
	}
	return d.waitSettled(ctx, 2*time.Minute)
}

// waitSettled waits until the TeamSpace is Ready for its generation and the
// quota controller has caught up with the quota (status.hard == spec.hard).
func (d *drift) waitSettled(ctx context.Context, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		ts, err := d.c.Dynamic.Resource(benchutil.TeamSpaces).Get(ctx, d.name, metav1.GetOptions{})
		if err == nil && benchutil.Ready(ts) {
			q, err := d.c.Kube.CoreV1().ResourceQuotas(d.ns).Get(ctx, quotaName, metav1.GetOptions{})
			if err == nil && hardPods(q.Spec.Hard) == d.want && hardPods(q.Status.Hard) == d.want {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("TeamSpace %s not settled (Ready, quota pods=%s) within %s", d.name, d.want, limit)
}

func hardPods(rl corev1.ResourceList) string {
	q, ok := rl[corev1.ResourcePods]
	if !ok {
		return "<none>"
	}
	return q.String()
}

// measurement breaks one child: its client, what the hook wants of it (as
// settled before the first repetition) and a watch of it alone.
type measurement struct {
	*drift
	child
	res   dynamic.ResourceInterface
	want  string
	watch *watchtiming.Watch
}

func (d *drift) measure(ctx context.Context, ch child) (*measurement, error) {
	m := &measurement{drift: d, child: ch, res: d.c.Dynamic.Resource(ch.gvr).Namespace(d.ns)}
	orig, err := m.res.Get(ctx, ch.name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	m.want = m.ownedOf(orig)
	sel := fields.OneTermEqualSelector("metadata.name", ch.name).String()
	m.watch, err = watchtiming.Start(ctx, func(ctx context.Context) (string, error) {
		l, err := m.res.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil {
			return "", err
		}
		return l.GetResourceVersion(), nil
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.FieldSelector = sel
		return m.res.Watch(ctx, o)
	})
	return m, err
}

// ownedOf is the JSON of the fields the hook owns.
func (m *measurement) ownedOf(o *unstructured.Unstructured) string {
	b, _ := json.Marshal(o.Object[m.owned])
	return string(b)
}

// prepare settles, pauses and drops the events seen so far.
func (m *measurement) prepare(ctx context.Context) error {
	if err := m.waitSettled(ctx, m.timeout); err != nil {
		return err
	}
	time.Sleep(m.settle)
	if m.beforeCmd != "" {
		if err := benchutil.RunShell(m.beforeCmd); err != nil {
			return fmt.Errorf("-before-cmd: %w", err)
		}
	}
	m.watch.Drain()
	return nil
}

// await reads events until done says so; it returns the time since start
// and a short trace of the events seen (A/M/D, "*" where the child is not
// as the hook wants it).
func (m *measurement) await(start time.Time, done func(watch.EventType, bool) bool) (time.Duration, string, error) {
	desired := func(e watchtiming.Event) (bool, bool) {
		o, ok := e.Object.(*unstructured.Unstructured)
		return ok, ok && m.ownedOf(o) == m.want
	}
	_, took, trace, err := m.watch.Await(start, m.timeout, func(e watchtiming.Event) bool {
		ok, same := desired(e)
		return ok && done(e.Type, same)
	}, func(e watchtiming.Event) string {
		if _, same := desired(e); !same {
			return string(e.Type)[:1] + "*"
		}
		return string(e.Type)[:1]
	})
	return took, trace, err
}

func (m *measurement) restore(ctx context.Context) (time.Duration, string, error) {
	if err := m.prepare(ctx); err != nil {
		return 0, "", err
	}
	start := time.Now()
	if err := m.res.Delete(ctx, m.child.name, metav1.DeleteOptions{}); err != nil {
		return 0, "", err
	}
	return m.await(start, func(t watch.EventType, same bool) bool {
		return t == watch.Added && same
	})
}

func (m *measurement) revert(ctx context.Context) (time.Duration, string, error) {
	if err := m.prepare(ctx); err != nil {
		return 0, "", err
	}
	start := time.Now()
	if _, err := m.res.Patch(ctx, m.child.name, m.patchType, []byte(m.patch), metav1.PatchOptions{}); err != nil {
		return 0, "", err
	}
	edited := false
	return m.await(start, func(_ watch.EventType, same bool) bool {
		if !same {
			edited = true
		}
		return edited && same
	})
}
