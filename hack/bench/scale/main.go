// Command scale measures the running engine + hook with many TeamSpaces:
//
//  1. create: -count TeamSpaces created at once; time until every one is
//     Ready=True for its generation (and until every quota exists);
//
//  2. steady: after a quiet period, the API write requests made during
//     -steady (nobody acting) — from kube-apiserver's
//     apiserver_request_total (mutating verbs on namespaces, resourcequotas,
//     limitranges, rolebindings, networkpolicies,
//     teamspaces) and from the engine's own client metrics
//     (rest_client_requests_total by method) — plus the hook calls made;
//
//  3. catch-up: the engine is stopped (-stop-cmd), every spec changes, and
//     after -down the engine is started again (-start-cmd); time until every
//     observedGeneration == generation, Ready=True and every quota holds the
//     new value.
//
//     eval "$(hack/up.sh env)"; cd hack && go run ./bench/scale -count 200 \
//     -engine-metrics http://127.0.0.1:19999/metrics -hook-metrics $TEAMSPACE_HOOK_URL/metrics \
//     -stop-cmd 'hack/up.sh engine-stop' -start-cmd 'hack/up.sh engine-start'
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
)

func main() {
	count := flag.Int("count", 200, "TeamSpaces to create")
	owners := flag.Bool("owners", true, "give each TeamSpace an owner, so that it has every child type")
	prefix := flag.String("prefix", "bench-s", "name prefix (names are <prefix>-NNN)")
	phases := flag.String("phases", "create,steady,catchup", "phases to run, comma-separated")
	steady := flag.Duration("steady", 60*time.Second, "steady-state window (nobody acting)")
	quiet := flag.Duration("quiet", 15*time.Second, "wait before the steady window (the quota controller's status writes settle)")
	down := flag.Duration("down", 60*time.Second, "how long the engine stays stopped in catch-up")
	stopCmd := flag.String("stop-cmd", "", "shell command that stops the engine (catch-up)")
	startCmd := flag.String("start-cmd", "", "shell command that starts the engine again (catch-up)")
	engineMetrics := flag.String("engine-metrics", "", "the engine's /metrics URL (its client's request counts)")
	hookMetrics := flag.String("hook-metrics", "", "the hook's /metrics URL (hook calls)")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up on a phase after this long")
	catchupPods := flag.Int("catchup-pods", 4, "spec.pods every TeamSpace is changed to in catch-up (created with 2)")
	cleanup := flag.Bool("cleanup", false, "delete the TeamSpaces at the end")
	label := flag.String("label", "", "tag printed on the RESULT lines (e.g. the engine flags)")
	foreign := benchutil.ForeignClusterFlag()
	flag.Parse()

	c, err := benchutil.NewClients("", *foreign)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := &scale{c: c, timeout: *timeout, label: *label, owners: *owners}
	for i := 0; i < *count; i++ {
		s.names = append(s.names, fmt.Sprintf("%s-%03d", *prefix, i))
	}
	s.startInformers(ctx)

	for _, phase := range strings.Split(*phases, ",") {
		var err error
		switch phase {
		case "create":
			err = s.create(ctx)
		case "steady":
			err = s.steady(ctx, *quiet, *steady, *engineMetrics, *hookMetrics)
		case "catchup":
			err = s.catchUp(ctx, *stopCmd, *startCmd, *down, *catchupPods)
		default:
			err = fmt.Errorf("unknown phase %q", phase)
		}
		if err != nil {
			log.Fatalf("%s: %v", phase, err)
		}
	}
	if *cleanup {
		for _, n := range s.names {
			_ = c.Dynamic.Resource(benchutil.TeamSpaces).Delete(ctx, n, metav1.DeleteOptions{})
		}
	}
}

type scale struct {
	c       *benchutil.Clients
	names   []string
	timeout time.Duration
	label   string
	owners  bool
	ts      cache.Store
	quotas  cache.Store
}

func (s *scale) result(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if s.label != "" {
		line += " config=" + s.label
	}
	fmt.Println("RESULT scale " + line)
}

func (s *scale) startInformers(ctx context.Context) {
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(s.c.Dynamic, 0)
	tsInf := dyn.ForResource(benchutil.TeamSpaces).Informer()
	kube := informers.NewSharedInformerFactoryWithOptions(s.c.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.LabelSelector = "platform.labhub.io/teamspace"
	}))
	qInf := kube.Core().V1().ResourceQuotas().Informer()
	dyn.Start(ctx.Done())
	kube.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), tsInf.HasSynced, qInf.HasSynced)
	s.ts, s.quotas = tsInf.GetStore(), qInf.GetStore()
}

// state counts TeamSpaces that are Ready for their generation and quotas
// that hold pods=want ("" = any value).
func (s *scale) state(want string) (ready, quotas int) {
	for _, n := range s.names {
		if obj, ok, _ := s.ts.GetByKey(n); ok {
			ts := obj.(*unstructured.Unstructured)
			if benchutil.Ready(ts) {
				ready++
			}
		}
		if obj, ok, _ := s.quotas.GetByKey("team-" + n + "/team-quota"); ok {
			q := obj.(*corev1.ResourceQuota)
			p, has := q.Spec.Hard[corev1.ResourcePods]
			if has && (want == "" || p.String() == want) {
				quotas++
			}
		}
	}
	return ready, quotas
}

// waitAll polls the informer caches every 10 ms until all TeamSpaces are
// Ready and all quotas hold want; it returns when each was first true.
func (s *scale) waitAll(start time.Time, want string) (allQuotas, allReady time.Duration, err error) {
	deadline := start.Add(s.timeout)
	lastLog := time.Now()
	for time.Now().Before(deadline) {
		ready, quotas := s.state(want)
		if quotas == len(s.names) && allQuotas == 0 {
			allQuotas = time.Since(start)
		}
		if ready == len(s.names) && quotas == len(s.names) {
			return allQuotas, time.Since(start), nil
		}
		if time.Since(lastLog) > 5*time.Second {
			fmt.Fprintf(os.Stderr, "  %.0fs: %d/%d Ready, %d/%d quotas\n", time.Since(start).Seconds(), ready, len(s.names), quotas, len(s.names))
			lastLog = time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	ready, quotas := s.state(want)
	return 0, 0, fmt.Errorf("after %s: %d/%d Ready, %d/%d quotas", s.timeout, ready, len(s.names), quotas, len(s.names))
}

func (s *scale) create(ctx context.Context) error {
	ts := s.c.Dynamic.Resource(benchutil.TeamSpaces)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(s.names))
	work := make(chan string)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range work {
				obj := benchutil.NewTeamSpace(n, 2, "100m")
				if s.owners {
					// Every child type: RoleBinding team-owners too.
					obj.Object["spec"].(map[string]any)["owners"] = []any{map[string]any{"kind": "Group", "name": n + "-devs"}}
				}
				if _, err := ts.Create(ctx, obj, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
					errs <- err
				}
			}
		}()
	}
	for _, n := range s.names {
		work <- n
	}
	close(work)
	wg.Wait()
	created := time.Since(start)
	select {
	case err := <-errs:
		return err
	default:
	}
	allQuotas, allReady, err := s.waitAll(start, "2")
	if err != nil {
		return err
	}
	s.result("create count=%d created_ms=%s all_quotas_ms=%s all_ready_ms=%s", len(s.names), benchutil.Ms(created), benchutil.Ms(allQuotas), benchutil.Ms(allReady))
	return nil
}

func (s *scale) steady(ctx context.Context, quiet, window time.Duration, engineURL, hookURL string) error {
	if ready, quotas := s.state(""); ready != len(s.names) || quotas != len(s.names) {
		return fmt.Errorf("not all Ready before the steady phase (%d/%d Ready)", ready, len(s.names))
	}
	time.Sleep(quiet)
	type source struct {
		name string
		get  benchutil.Getter
		keep func(string) bool
	}
	sources := []source{{"apiserver_writes", s.c.APIServerGetter(), benchutil.APIServerWrites}}
	if engineURL != "" {
		sources = append(sources, source{"engine_client_writes", benchutil.HTTPGetter(engineURL), func(l string) bool {
			return strings.HasPrefix(l, "rest_client_requests_total{") && !strings.Contains(l, `method="GET"`)
		}}, source{"engine_client_gets", benchutil.HTTPGetter(engineURL), func(l string) bool {
			return strings.HasPrefix(l, "rest_client_requests_total{") && strings.Contains(l, `method="GET"`)
		}})
	}
	if hookURL != "" {
		sources = append(sources, source{"hook_calls", benchutil.HTTPGetter(hookURL), func(l string) bool {
			return strings.HasPrefix(l, "teamspace_hook_requests_total{")
		}})
	}
	before := make([]benchutil.Counters, len(sources))
	for i, src := range sources {
		c, err := benchutil.Scrape(ctx, src.get, src.keep)
		if err != nil {
			return fmt.Errorf("%s: %w", src.name, err)
		}
		before[i] = c
	}
	fmt.Fprintf(os.Stderr, "steady: watching for %s\n", window)
	time.Sleep(window)
	parts := []string{fmt.Sprintf("steady window_s=%.0f", window.Seconds())}
	for i, src := range sources {
		after, err := benchutil.Scrape(ctx, src.get, src.keep)
		if err != nil {
			return fmt.Errorf("%s: %w", src.name, err)
		}
		total, lines := benchutil.Diff(before[i], after)
		parts = append(parts, fmt.Sprintf("%s=%g", src.name, total))
		fmt.Fprintf(os.Stderr, "  %s: %g\n%s\n", src.name, total, strings.Join(lines, "\n"))
	}
	s.result("%s", strings.Join(parts, " "))
	return nil
}

func (s *scale) catchUp(ctx context.Context, stopCmd, startCmd string, down time.Duration, pods int) error {
	if stopCmd == "" || startCmd == "" {
		return fmt.Errorf("catch-up needs -stop-cmd and -start-cmd")
	}
	if err := benchutil.RunShell(stopCmd); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	stopped := time.Now()
	ts := s.c.Dynamic.Resource(benchutil.TeamSpaces)
	for _, n := range s.names {
		if _, err := ts.Patch(ctx, n, types.MergePatchType, []byte(fmt.Sprintf(`{"spec":{"pods":%d}}`, pods)), metav1.PatchOptions{}); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "catch-up: %d specs changed in %s; engine down for %s\n", len(s.names), time.Since(stopped).Round(time.Millisecond), down)
	time.Sleep(time.Until(stopped.Add(down)))
	start := time.Now()
	if err := benchutil.RunShell(startCmd); err != nil {
		return fmt.Errorf("start: %w", err)
	}
	started := time.Since(start)
	allQuotas, allReady, err := s.waitAll(start, strconv.Itoa(pods))
	if err != nil {
		return err
	}
	s.result("catchup count=%d engine_start_ms=%s all_quotas_ms=%s all_ready_ms=%s", len(s.names), benchutil.Ms(started), benchutil.Ms(allQuotas), benchutil.Ms(allReady))
	return nil
}
