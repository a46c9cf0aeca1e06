// Command drift measures how fast the running engine + hook undo drift of a
// TeamSpace's quota, through one client-go watch in this one process (no
// kubectl start-up in the figures):
//
//   - restore: the quota is deleted; time until a new one is seen (ADDED);
//   - revert: spec.hard.pods is patched to 99; time until the watch shows
//     the TeamSpace's value again.
//
// Each repetition starts from a settled state (TeamSpace Ready for its
// generation, the quota controller's status.hard equal to spec.hard) and is
// timed from just before the delete/patch request is sent.
//
//	eval "$(hack/up.sh env)"; cd hack && go run ./bench/drift -reps 20
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
	"github.com/labhub/teamspace/tests/watchtiming"
)

const quotaName = "team-quota"

func main() {
	name := flag.String("name", "bench-drift", "TeamSpace to use (created if missing, deleted at the end unless -keep)")
	reps := flag.Int("reps", 20, "repetitions of each measurement")
	pods := flag.Int64("pods", 3, "spec.pods of the TeamSpace")
	settle := flag.Duration("settle", 300*time.Millisecond, "pause after the state has settled, before each repetition")
	timeout := flag.Duration("timeout", 30*time.Second, "give up on one repetition after this long")
	keep := flag.Bool("keep", false, "keep the TeamSpace at the end")
	label := flag.String("label", "", "tag printed on the RESULT lines (e.g. the engine flags)")
	kinds := flag.String("kinds", "restore,revert", "what to measure, comma-separated")
	beforeCmd := flag.String("before-cmd", "", "shell command run once the state has settled, just before each break is sent (e.g. kill -9 the leading engine: the figure is then the failover)")
	foreign := benchutil.ForeignClusterFlag()
	flag.Parse()

	c, err := benchutil.NewClients("", *foreign)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	d := &drift{c: c, name: *name, ns: "team-" + *name, want: fmt.Sprint(*pods), settle: *settle, timeout: *timeout}
	if err := d.setUp(ctx, *pods); err != nil {
		log.Fatal(err)
	}
	if !*keep {
		defer func() {
			_ = c.Dynamic.Resource(benchutil.TeamSpaces).Delete(context.Background(), *name, metav1.DeleteOptions{})
		}()
	}
	if err := d.startWatch(ctx); err != nil {
		log.Fatal(err)
	}
	results := map[string][]time.Duration{}
	d.beforeCmd = *beforeCmd
	for _, kind := range strings.Split(*kinds, ",") {
		for i := 0; i < *reps; i++ {
			var took time.Duration
			var trace string
			var err error
			switch kind {
			case "restore":
				took, trace, err = d.restore(ctx)
			case "revert":
				took, trace, err = d.revert(ctx)
			default:
				log.Fatalf("-kinds: unknown %q", kind)
			}
			if err != nil {
				log.Fatalf("%s #%d: %v", kind, i+1, err)
			}
			fmt.Fprintf(os.Stderr, "%s #%d: %s ms  events: %s\n", kind, i+1, benchutil.Ms(took), trace)
			results[kind] = append(results[kind], took)
		}
	}
	for _, kind := range strings.Split(*kinds, ",") {
		fmt.Printf("RESULT drift %s %s%s\n", kind, benchutil.Summarise(results[kind]), tag(*label))
		fmt.Printf("SAMPLES drift %s %s\n", kind, benchutil.List(results[kind]))
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
	watch   *watchtiming.Watch
	// beforeCmd runs after prepare, before the clock starts (see -before-cmd).
	beforeCmd string
}

// setUp creates the TeamSpace (or sets its spec) and waits until it is Ready.
func (d *drift) setUp(ctx context.Context, pods int64) error {
	ts := d.c.Dynamic.Resource(benchutil.TeamSpaces)
	_, err := ts.Create(ctx, benchutil.NewTeamSpace(d.name, pods, "500m"), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		patch := fmt.Sprintf(`{"spec":{"pods":%d,"cpu":"500m"}}`, pods)
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

// startWatch watches the one quota, resuming after any watch closure.
func (d *drift) startWatch(ctx context.Context) error {
	sel := fields.OneTermEqualSelector("metadata.name", quotaName).String()
	w, err := watchtiming.StartWith[*corev1.ResourceQuotaList](ctx, d.c.Kube.CoreV1().ResourceQuotas(d.ns), sel)
	if err != nil {
		return err
	}
	d.watch = w
	return nil
}

// prepare settles, pauses and drops the events seen so far.
func (d *drift) prepare(ctx context.Context) error {
	if err := d.waitSettled(ctx, d.timeout); err != nil {
		return err
	}
	time.Sleep(d.settle)
	if d.beforeCmd != "" {
		c := exec.Command("bash", "-c", d.beforeCmd)
		c.Stdout, c.Stderr = os.Stderr, os.Stderr
		if err := c.Run(); err != nil {
			return fmt.Errorf("-before-cmd: %w", err)
		}
	}
	d.watch.Drain()
	return nil
}

// await reads events until done says so; it returns the time since start
// and a short trace of the events seen (A/M/D with spec pods and status pods).
func (d *drift) await(start time.Time, done func(watch.EventType, *corev1.ResourceQuota) bool) (time.Duration, string, error) {
	_, took, trace, err := d.watch.Await(start, d.timeout, func(e watchtiming.Event) bool {
		q, ok := e.Object.(*corev1.ResourceQuota)
		return ok && done(e.Type, q)
	}, func(e watchtiming.Event) string {
		q, ok := e.Object.(*corev1.ResourceQuota)
		if !ok {
			return string(e.Type)
		}
		return fmt.Sprintf("%s(%s/%s)", string(e.Type)[:1], hardPods(q.Spec.Hard), hardPods(q.Status.Hard))
	})
	return took, trace, err
}

func (d *drift) restore(ctx context.Context) (time.Duration, string, error) {
	if err := d.prepare(ctx); err != nil {
		return 0, "", err
	}
	start := time.Now()
	if err := d.c.Kube.CoreV1().ResourceQuotas(d.ns).Delete(ctx, quotaName, metav1.DeleteOptions{}); err != nil {
		return 0, "", err
	}
	return d.await(start, func(t watch.EventType, q *corev1.ResourceQuota) bool {
		return t == watch.Added && hardPods(q.Spec.Hard) == d.want
	})
}

func (d *drift) revert(ctx context.Context) (time.Duration, string, error) {
	if err := d.prepare(ctx); err != nil {
		return 0, "", err
	}
	start := time.Now()
	_, err := d.c.Kube.CoreV1().ResourceQuotas(d.ns).Patch(ctx, quotaName, types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"99"}}}`), metav1.PatchOptions{})
	if err != nil {
		return 0, "", err
	}
	sawPatch := false
	return d.await(start, func(t watch.EventType, q *corev1.ResourceQuota) bool {
		if hardPods(q.Spec.Hard) == "99" {
			sawPatch = true
			return false
		}
		return sawPatch && hardPods(q.Spec.Hard) == d.want
	})
}
