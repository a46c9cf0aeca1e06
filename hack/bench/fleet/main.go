// Command fleet measures the running engine + hook with many TeamSpaces at
// once, in one process and one run, so that every figure of a row comes
// from the same cluster (issue #11):
//
//  0. empty (when asked for, first): -steady with none of its TeamSpaces:
//     the CPU cores of every process and engine requests of the setup at
//     rest, the base of the steady window's above_empty_cores;
//  1. floor: -count namespaces, each with a ResourceQuota, created by this
//     plain client with 16 requests in flight (floor_ms: what the API server
//     alone takes for those objects); then the LimitRange, RoleBinding and
//     NetworkPolicy of each, and the owners' ClusterRole and
//     ClusterRoleBinding (floor_all_ms: every object a TeamSpace holds,
//     written by a client that writes nothing else). Deleted afterwards,
//     and waited for when a phase follows;
//  2. create: -count TeamSpaces created at once; time until every one is
//     Ready for its generation, as a multiple of both floors, and the
//     statuses each went through (transitions: the engine's status writes
//     and the Ready reasons in order; again after steady);
//     quiet (right after create): the minute after the last Ready (CPU
//     cores, engine requests, hook calls) and how long after it the engine
//     first spends under -quiet-cores over 10 s (issue #55). With
//     -profile-dir, create and quiet are profiled whole in 10 s slices;
//  3. steady: once the quota controller's catch-up is over (no quota status
//     write for 5 s), -steady with nothing happening: CPU cores by process
//     and above the empty window, API writes, engine requests
//     by verb, hook calls;
//  4. churn: for every rate of -churn (pods created per second, each pod
//     deleted -pod-life later; pods are admitted and counted by the quota,
//     no kubelet runs them): first -cost-window of churn alone (engine
//     requests per pod event), then -window of drift probes alternating
//     restore (the quota deleted) and revert (spec.hard.pods patched to 99)
//     on TeamSpaces picked at random, p50/p99/max; engine requests by verb,
//     hook calls per second and CPU seconds of every process for both;
//  5. restart: the engine is stopped and started (-stop-cmd, -start-cmd),
//     as install.sh does on every run and so on every hook upgrade: on
//     start it lists every TeamSpace and syncs each once, the one re-sync
//     a new hook version needs (resyncs come every 6-12 h). Time until the
//     hook has answered a sync per TeamSpace, engine requests, CPU, and
//     restore probes meanwhile: how long a repair waits behind it;
//  6. catchup: the engine is stopped, every TeamSpace's spec.pods changes,
//     and after -down the engine is started again; time until every quota
//     holds the new value and every TeamSpace is Ready for its generation
//     (what the engine's list on start catches up after an outage).
//  7. templates: a ConfigMap template of the platform's (issue #53) added,
//     changed and deleted; time until every team namespace has the copy as
//     it is (or none), then until every TeamSpace is Ready, engine requests
//     and hook calls of each (templates.go);
//  8. secrets: -secrets Secrets no TeamSpace uses: the engine's memory
//     before and after (it watches every Secret for the templates), the
//     cost of creating them and -steady at rest with them there.
//
// At the end it prints the RSS of every process of the setup (-state) and
// deletes every object it made (waiting at most -cleanup-wait). Every loop
// is bounded by -timeout; it refuses a cluster hack/cluster.sh did not start
// unless given -foreign-cluster.
//
//	eval "$(hack/up.sh env)"; cd hack && go run ./bench/fleet -count 1000 \
//	  -engine-metrics http://127.0.0.1:19999/metrics -hook-metrics $TEAMSPACE_HOOK_URL/metrics
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/tests/controlplane"
)

const (
	quotaName = "team-quota"
	tsPods    = 20  // spec.pods of every TeamSpace: room for churn pods
	tsCPU     = "2" // spec.cpu: 100m default request per pod
	// entryPods and entryCPU are each extra namespace's share (-namespaces):
	// 100m a pod, as in team-<name>.
	entryPods = 6
	entryCPU  = 600
)

func main() {
	count := flag.Int("count", 1000, "TeamSpaces to create")
	prefix := flag.String("prefix", "fleet", "name prefix (TeamSpaces <prefix>-NNNN, floor namespaces <prefix>-floor-NNNN)")
	phases := flag.String("phases", "floor,create,steady,churn,restart", "phases to run, comma-separated (empty: a window of -steady with no TeamSpaces, first)")
	churn := flag.String("churn", "0,10,50,100", "pod churn rates (pods created per second), one drift window each")
	window := flag.Duration("window", 60*time.Second, "drift window per churn rate")
	steadyWindow := flag.Duration("steady", 60*time.Second, "steady-state window (nobody acting; resyncs come every 6-12 h, so none falls in it)")
	quiet := flag.Duration("quiet", 15*time.Second, "wait after create before the steady window (the quota controller's status writes settle)")
	quietCores := flag.Float64("quiet-cores", 0.02, "phase quiet: the engine's cores under which it is quiet")
	costWindow := flag.Duration("cost-window", 20*time.Second, "per churn rate, a window without probes first: what the churn alone costs")
	podLife := flag.Duration("pod-life", 2*time.Second, "how long a churn pod lives before it is deleted")
	gap := flag.Duration("probe-gap", 200*time.Millisecond, "pause between two drift probes")
	engineMetrics := flag.String("engine-metrics", "", "the engine's /metrics URL")
	hookMetrics := flag.String("hook-metrics", "", "the hook's /metrics URL")
	enginePprof := flag.String("engine-pprof", "", "the engine's pprof base URL (--pprof-address), for -profile-dir")
	profileDir := flag.String("profile-dir", "", "write CPU profiles of the engine and the API server here: create whole and the quiet phase, in 10 s slices (engine-create-NNN.pprof, engine-after-NNN.pprof), and 30 s of the churn rate -profile-churn")
	profileChurn := flag.Int("profile-churn", 50, "the churn rate profiled (with -profile-dir)")
	state := flag.String("state", os.Getenv("TEAMSPACE_STATE"), "the setup's state directory: its processes' CPU and RSS are reported")
	timeout := flag.Duration("timeout", 10*time.Minute, "give up on a phase after this long")
	cleanupWait := flag.Duration("cleanup-wait", 5*time.Minute, "how long to wait at the end for what was deleted to be gone (0: do not wait)")
	label := flag.String("label", "", "tag printed on the RESULT lines (e.g. the engine configuration)")
	stopCmd := flag.String("stop-cmd", "", "shell command that stops the engine (restart, catchup)")
	startCmd := flag.String("start-cmd", "", "shell command that starts the engine again (restart, catchup)")
	down := flag.Duration("down", 60*time.Second, "how long the engine stays stopped in catchup")
	extra := flag.Int("namespaces", 0, "extra namespaces per TeamSpace (spec.namespaces, at most 3): entries e1..eN of 6 pods and 600m each, team-<name> the rest; churn pods go to every namespace in turn, and phase move shifts 100m from e1 to team-<name> in every TeamSpace")
	secretCount := flag.Int("secrets", 10000, "phase secrets: how many Secrets no TeamSpace uses are made (1 KiB each), in a namespace of their own")
	perRequester := flag.Int("per-requester", 0, "TeamSpaces per requester: each run of this many is labelled as one requester's and the allowance set to hold exactly them, so that every sync counts its requester's TeamSpaces, related objects of each other (0: none labelled, none counted, as an exempt user's)")
	auditLog := flag.String("audit-log", "", "kube-apiserver's JSON audit log (TEAMSPACE_APISERVER_AUDIT=1 before hack/bench.sh): create, quiet and floor count every client's requests by verb and resource in it (default: audit.log in -state when there is one)")
	foreign := benchutil.ForeignClusterFlag()
	flag.Parse()

	c, err := benchutil.NewClients("", *foreign)
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := &fleet{c: c, timeout: *timeout, label: *label, prefix: *prefix, engineURL: *engineMetrics, hookURL: *hookMetrics,
		enginePprof: *enginePprof, profileDir: *profileDir, profileChurn: *profileChurn, perRequester: *perRequester, extra: *extra}
	if *extra < 0 || *extra > 3 {
		log.Fatalf("-namespaces %d: from 0 to 3", *extra)
	}
	for i := 0; i < *count; i++ {
		f.names = append(f.names, fmt.Sprintf("%s-%04d", *prefix, i))
	}
	for _, n := range f.names {
		f.namespaces = append(f.namespaces, "team-"+n)
		for e := 1; e <= *extra; e++ {
			f.namespaces = append(f.namespaces, fmt.Sprintf("team-%s--e%d", n, e))
		}
	}
	if *auditLog == "" && *state != "" {
		p := filepath.Join(*state, controlplane.AuditLog)
		if _, err := os.Stat(p); err == nil {
			*auditLog = p
		}
	}
	f.auditLog = *auditLog
	if f.state = *state; f.state != "" {
		if f.procs, err = benchutil.FindProcs(*state); err != nil {
			log.Fatal(err)
		}
	}
	f.startInformers(ctx)
	defer f.cleanup(*cleanupWait)

	for _, phase := range strings.Split(*phases, ",") {
		if phase != "quiet" {
			// the profile of create goes on into quiet only
			f.stopSlices()
		}
		var err error
		switch phase {
		case "floor":
			// Its namespaces are deleted; waited for only when a phase
			// follows (deleting a thousand namespaces keeps the namespace
			// controller busy for minutes).
			err = f.floor(ctx, !strings.HasSuffix(*phases, "floor"))
		case "empty":
			err = f.empty(ctx, *steadyWindow)
		case "create":
			err = f.create(ctx)
		case "quiet":
			err = f.quietPhase(ctx, *quietCores)
		case "steady":
			time.Sleep(*quiet)
			if err = f.settle(ctx); err == nil {
				err = f.steady(ctx, *steadyWindow)
			}
		case "churn":
			for _, r := range strings.Split(*churn, ",") {
				rate, perr := strconv.Atoi(r)
				if perr != nil {
					log.Fatalf("-churn %q: %v", r, perr)
				}
				if err = f.churnWindow(ctx, rate, *costWindow, *window, *podLife, *gap); err != nil {
					break
				}
			}
		case "restart":
			err = f.restart(ctx, *stopCmd, *startCmd, *gap)
		case "catchup":
			err = f.catchUp(ctx, *stopCmd, *startCmd, *down)
		case "move":
			err = f.move(ctx)
		case "templates":
			err = f.templates(ctx, *steadyWindow)
		case "secrets":
			err = f.secrets(ctx, *secretCount, *steadyWindow)
		default:
			err = fmt.Errorf("unknown phase %q", phase)
		}
		if err != nil {
			log.Printf("%s: %v", phase, err)
			f.cleanup(*cleanupWait)
			os.Exit(1)
		}
	}
	f.stopSlices()
	f.result("memory count=%d %s", len(f.names), benchutil.FormatMemory(f.procs))
}

type fleet struct {
	c                      *benchutil.Clients
	names                  []string
	prefix                 string
	timeout                time.Duration
	label                  string
	engineURL, hookURL     string
	enginePprof            string
	profileDir             string
	profileChurn           int
	perRequester           int      // -per-requester
	extra                  int      // -namespaces
	namespaces             []string // every team namespace: team-<name>, then its entries'
	state                  string   // the setup's state directory (-state)
	auditLog               string   // kube-apiserver's audit log (-audit-log)
	procs                  []benchutil.Proc
	ts, quotas             cache.Store
	floorTime, createReady time.Duration
	floorAllTime           time.Duration
	madeFloor, madeTeams   bool
	readyMu                sync.Mutex
	ready                  map[string]bool // TeamSpace name -> Ready for its generation
	statuses               map[string]*statusTrail
	probesMu               sync.Mutex
	probes                 map[string]chan *corev1.ResourceQuota // namespace -> waiting probe
	cleanupOnce            sync.Once
	podsMade, podsDeleted  atomic.Int64
	// podsRefused counts churn pods the API server refused, firstRefusal
	// holds the first error: a churn that does not run must not report.
	podsRefused  atomic.Int64
	firstRefusal atomic.Value
	// emptyCores is the empty phase's CPU cores by process (nil without it).
	emptyCores map[string]float64
	// createReadyAt is when create saw its last TeamSpace Ready.
	createReadyAt time.Time
	// slices profiles create and what follows it (-profile-dir).
	slices *slicer
}

func (f *fleet) result(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if f.label != "" {
		line += " config=" + f.label
	}
	fmt.Println("RESULT fleet " + line)
}

func (f *fleet) startInformers(ctx context.Context) {
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(f.c.Dynamic, 0)
	tsInf := dyn.ForResource(benchutil.TeamSpaces).Informer()
	// Readiness is tracked per event, not by polling the cache: with a
	// thousand TeamSpaces a poll loop costs this process more CPU than the
	// hook spends, on the same two cores as what it measures.
	f.ready = map[string]bool{}
	f.statuses = map[string]*statusTrail{}
	track := func(obj any) {
		ts, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		f.readyMu.Lock()
		f.ready[ts.GetName()] = benchutil.Ready(ts)
		f.statuses[ts.GetName()] = f.statuses[ts.GetName()].next(ts)
		f.readyMu.Unlock()
	}
	if _, err := tsInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    track,
		UpdateFunc: func(_, cur any) { track(cur) },
		DeleteFunc: func(obj any) {
			if ts, ok := obj.(*unstructured.Unstructured); ok {
				f.readyMu.Lock()
				delete(f.ready, ts.GetName())
				f.readyMu.Unlock()
			}
		},
	}); err != nil {
		log.Fatal(err)
	}
	kube := informers.NewSharedInformerFactoryWithOptions(f.c.Kube, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", quotaName).String()
	}))
	qInf := kube.Core().V1().ResourceQuotas().Informer()
	f.probes = map[string]chan *corev1.ResourceQuota{}
	notify := func(obj any) {
		q, ok := obj.(*corev1.ResourceQuota)
		if !ok {
			return
		}
		f.probesMu.Lock()
		ch := f.probes[q.Namespace]
		f.probesMu.Unlock()
		if ch != nil {
			select {
			case ch <- q:
			default:
			}
		}
	}
	if _, err := qInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    notify,
		UpdateFunc: func(_, cur any) { notify(cur) },
	}); err != nil {
		log.Fatal(err)
	}
	dyn.Start(ctx.Done())
	kube.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), tsInf.HasSynced, qInf.HasSynced)
	f.ts, f.quotas = tsInf.GetStore(), qInf.GetStore()
}

// parallel runs do for every name with n requests in flight and returns the
// first error.
func parallel(names []string, n int, do func(string) error) error {
	var wg sync.WaitGroup
	var first error
	var mu sync.Mutex
	work := make(chan string)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				if err := do(name); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	for _, name := range names {
		work <- name
	}
	close(work)
	wg.Wait()
	return first
}

// floor creates what the engine creates for the TeamSpaces' first two
// objects (a namespace and its quota), by a plain client.
func (f *fleet) floor(ctx context.Context, waitGone bool) error {
	names := make([]string, len(f.names))
	for i := range names {
		names[i] = fmt.Sprintf("%s-floor-%04d", f.prefix, i)
	}
	f.madeFloor = true
	w := f.begin(ctx)
	cpu := f.sampleCPU()
	start := time.Now()
	err := parallel(names, 16, func(n string) error {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n, Labels: map[string]string{"teamspace-bench": "floor"}}}
		if _, err := f.c.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: quotaName}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			corev1.ResourcePods: resource.MustParse(strconv.Itoa(tsPods)), corev1.ResourceRequestsCPU: resource.MustParse(tsCPU)}}}
		_, err := f.c.Kube.CoreV1().ResourceQuotas(n).Create(ctx, q, metav1.CreateOptions{})
		return err
	})
	f.floorTime = time.Since(start)
	if err != nil {
		return err
	}
	// The rest of what a TeamSpace with owners and network isolation holds:
	// the floor of a controller that wrote nothing but its children.
	err = parallel(names, 16, func(n string) error { return f.floorRest(ctx, n) })
	f.floorAllTime = time.Since(start)
	if err != nil {
		return err
	}
	cpuLine := benchutil.FormatCPU(cpu, f.sampleCPU())
	_, floorSums := w.end(ctx)
	w.cost("floor", len(names), floorSums)
	f.stored(ctx, "floor", names[0], "")
	wait := time.Duration(0)
	if waitGone {
		wait = f.timeout
	}
	gone, err := f.deleteFloor(ctx, wait)
	if err != nil {
		return err
	}
	ratio, ratioAll := "n/a", "n/a"
	if f.createReady > 0 { // create ran first (-phases create,...,floor)
		ratio = fmt.Sprintf("%.1f", float64(f.createReady)/float64(f.floorTime))
		ratioAll = fmt.Sprintf("%.1f", float64(f.createReady)/float64(f.floorAllTime))
	}
	f.result("floor count=%d floor_ms=%s floor_all_ms=%s cleanup_ms=%s create_x_floor=%s create_x_floor_all=%s %s", len(names),
		benchutil.Ms(f.floorTime), benchutil.Ms(f.floorAllTime), benchutil.Ms(gone), ratio, ratioAll, cpuLine)
	return nil
}

// floorRest creates a LimitRange, a RoleBinding and a NetworkPolicy in
// namespace n, shaped like the hook's.
func (f *fleet) floorRest(ctx context.Context, n string) error {
	cpu := resource.MustParse("100m")
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "team-defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: cpu}}}}}
	if _, err := f.c.Kube.CoreV1().LimitRanges(n).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		return err
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "team-owners"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: n + "-devs"}}}
	if _, err := f.c.Kube.RbacV1().RoleBindings(n).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return err
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "team-isolation"}, Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}}}}
	if _, err := f.c.Kube.NetworkingV1().NetworkPolicies(n).Create(ctx, np, metav1.CreateOptions{}); err != nil {
		return err
	}
	// The owners' ClusterRole and ClusterRoleBinding (issue #27), cluster
	// scoped: labelled so that deleteFloor finds them.
	owner := metav1.ObjectMeta{Name: "teamspace-owner-" + n, Labels: map[string]string{"teamspace-bench": "floor"}}
	cr := &rbacv1.ClusterRole{ObjectMeta: owner, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{"platform.labhub.io"}, Resources: []string{"teamspaces"}, ResourceNames: []string{n},
		Verbs: []string{"get", "watch", "update", "patch"}}}}
	if _, err := f.c.Kube.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{}); err != nil {
		return err
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: owner,
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: owner.Name},
		Subjects: rb.Subjects}
	_, err := f.c.Kube.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{})
	return err
}

// deleteFloor deletes the floor's namespaces and owners' roles and
// bindings, and waits until the namespaces are gone.
func (f *fleet) deleteFloor(ctx context.Context, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	sel := metav1.ListOptions{LabelSelector: "teamspace-bench=floor"}
	if err := f.c.Kube.RbacV1().ClusterRoleBindings().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return 0, err
	}
	if err := f.c.Kube.RbacV1().ClusterRoles().DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil {
		return 0, err
	}
	l, err := f.c.Kube.CoreV1().Namespaces().List(ctx, sel)
	if err != nil {
		return 0, err
	}
	var names []string
	for _, ns := range l.Items {
		names = append(names, ns.Name)
	}
	if err := parallel(names, 16, func(n string) error {
		err := f.c.Kube.CoreV1().Namespaces().Delete(ctx, n, metav1.DeleteOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}); err != nil {
		return 0, err
	}
	for time.Since(start) < wait {
		l, err := f.c.Kube.CoreV1().Namespaces().List(ctx, sel)
		if err == nil && len(l.Items) == 0 {
			return time.Since(start), nil
		}
		time.Sleep(500 * time.Millisecond)
	}
	if wait == 0 {
		return 0, nil
	}
	return 0, fmt.Errorf("floor namespaces not gone after %s", wait)
}

func (f *fleet) readyCount() int {
	f.readyMu.Lock()
	defer f.readyMu.Unlock()
	ready := 0
	for _, n := range f.names {
		if f.ready[n] {
			ready++
		}
	}
	return ready
}

// window is what the engine, the hook and the API server did between begin
// and end, and the CPU every process spent.
type window struct {
	f     *fleet
	start time.Time
	// first and last are the scrapes that began and ended the window
	// (last is set by end, for cost).
	first, last scraped
	cpu         benchutil.CPUSample
	// audit is where the audit log stood at the start (-audit-log).
	audit int64
}

func isEngineRequest(l string) bool { return strings.HasPrefix(l, "rest_client_requests_total{") }
func isSync(l string) bool          { return strings.HasPrefix(l, "workqueue_work_duration_seconds_count{") }
func isWatchEvent(l string) bool {
	return strings.HasPrefix(l, "apiserver_watch_events_total{") || strings.HasPrefix(l, "apiserver_watch_events_sizes_sum{")
}
func isHookCall(l string) bool   { return strings.HasPrefix(l, "teamspace_hook_requests_total{") }
func isAPIRequest(l string) bool { return strings.HasPrefix(l, "apiserver_request_total{") }

// scraped are the counters a window compares: the engine's requests, its
// CompositeController queue series and every queue's syncs (work_duration
// counts by controller), the hook's calls, the API server's requests and
// the watch events it sent (count and bytes by resource).
type scraped struct {
	engine, queue, syncs, hook, api, watch benchutil.Counters
}

// scrape reads the counters a window compares: the engine's requests, its
// CompositeController queue series and every queue's syncs (from one read
// of its /metrics), the hook's calls and the API server's requests and
// watch events.
func (f *fleet) scrape(ctx context.Context) scraped {
	s := scraped{engine: benchutil.Counters{}, queue: benchutil.Counters{}, syncs: benchutil.Counters{},
		hook: benchutil.Counters{}, api: benchutil.Counters{}, watch: benchutil.Counters{}}
	if f.engineURL != "" {
		keep := func(l string) bool { return isEngineRequest(l) || benchutil.IsCompositeQueue(l) || isSync(l) }
		if c, err := benchutil.Scrape(ctx, benchutil.HTTPGetter(f.engineURL), keep); err == nil {
			for k, v := range c {
				if isSync(k) {
					s.syncs[k] = v
				}
				if benchutil.IsCompositeQueue(k) {
					s.queue[k] = v
				} else if isEngineRequest(k) {
					s.engine[k] = v
				}
			}
		} else {
			log.Printf("engine metrics: %v", err)
		}
	}
	if f.hookURL != "" {
		if c, err := benchutil.Scrape(ctx, benchutil.HTTPGetter(f.hookURL), isHookCall); err == nil {
			s.hook = c
		} else {
			log.Printf("hook metrics: %v", err)
		}
	}
	keep := func(l string) bool { return isAPIRequest(l) || isWatchEvent(l) }
	if c, err := benchutil.Scrape(ctx, f.c.APIServerGetter(), keep); err == nil {
		for k, v := range c {
			if isWatchEvent(k) {
				s.watch[k] = v
			} else {
				s.api[k] = v
			}
		}
	} else {
		log.Printf("apiserver metrics: %v", err)
	}
	return s
}

func (f *fleet) sampleCPU() benchutil.CPUSample { return benchutil.SampleCPU(f.procs) }

func (f *fleet) begin(ctx context.Context) *window {
	w := &window{f: f, cpu: f.sampleCPU()}
	if f.auditLog != "" {
		w.audit = benchutil.AuditSize(f.auditLog)
	}
	w.first = f.scrape(ctx)
	w.start = time.Now()
	return w
}

// sums are a window's totals: what churn divides by pod events, what
// steady turns into cores.
type sums struct {
	engine, secs float64
	// statusWrites are writes of teamspaces/status (the engine's, of the
	// hook's answers); quotaStatusWrites of resourcequotas/status (the
	// quota admission's and controller's: each a change of the usage).
	statusWrites, quotaStatusWrites float64
	// cpu is the CPU sample at the window's end.
	cpu benchutil.CPUSample
}

// end summarises the window: engine requests by method (total and per
// second), hook calls, API server writes on the TeamSpace resources and
// status writes, CPU; as a RESULT line and as sums.
func (w *window) end(ctx context.Context) (string, sums) {
	var s sums
	s.secs = time.Since(w.start).Seconds()
	s.cpu = w.f.sampleCPU()
	w.last = w.f.scrape(ctx)
	first, last := w.first, w.last
	byMethod := benchutil.SumBy(first.engine, last.engine, "method")
	for _, v := range byMethod {
		s.engine += v
	}
	hookCalls, _ := benchutil.Diff(first.hook, last.hook)
	var writes float64
	tsStatus, quotaStatus := benchutil.StatusWrites("teamspaces"), benchutil.StatusWrites("resourcequotas")
	for k, v := range last.api {
		d := v - first.api[k]
		if benchutil.APIServerWrites(k + " ") {
			writes += d
		}
		if tsStatus(k) {
			s.statusWrites += d
		}
		if quotaStatus(k) {
			s.quotaStatusWrites += d
		}
	}
	line := fmt.Sprintf("engine_req=%g engine_req_per_s=%.1f %s hook_calls=%g hook_calls_per_s=%.1f api_writes=%g teamspace_status_writes=%g quota_status_writes=%g %s %s",
		s.engine, s.engine/s.secs, benchutil.FormatBy("engine_", byMethod), hookCalls, hookCalls/s.secs, writes, s.statusWrites, s.quotaStatusWrites,
		benchutil.FormatQueue(first.queue, last.queue), benchutil.FormatCPU(w.cpu, s.cpu))
	return line, s
}

func (f *fleet) create(ctx context.Context) error {
	ts := f.c.Dynamic.Resource(benchutil.TeamSpaces)
	f.madeTeams = true
	if f.profileDir != "" {
		// create is profiled whole, in slices (a profile's length is
		// fixed when it starts), and on into the quiet phase
		f.slices = f.startSlices(ctx)
	}
	requester := map[string]string{}
	if f.perRequester > 0 {
		if err := f.setAllowance(ctx); err != nil {
			return err
		}
		for i, n := range f.names {
			requester[n] = fmt.Sprintf("%s-r%04d", f.prefix, i/f.perRequester)
		}
	}
	w := f.begin(ctx)
	err := parallel(f.names, 32, func(n string) error {
		obj := benchutil.NewTeamSpace(n, tsPods, tsCPU)
		// Every child type but the NetworkPolicy: RoleBinding team-owners too.
		obj.Object["spec"].(map[string]any)["owners"] = []any{map[string]any{"kind": "Group", "name": n + "-devs"}}
		if f.extra > 0 {
			obj.Object["spec"].(map[string]any)["namespaces"] = f.entries(entryCPU)
		}
		if r := requester[n]; r != "" {
			// The admin is exempt: the label stays as written, and the
			// API server's requested-by is the admin for all, so the
			// label alone tells requesters apart.
			obj.SetLabels(map[string]string{v1alpha1.RequesterLabel: r})
		}
		_, err := ts.Create(ctx, obj, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
	}
	created := time.Since(w.start)
	deadline := w.start.Add(f.timeout)
	lastLog := time.Now()
	for {
		ready := f.readyCount()
		if ready == len(f.names) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d/%d Ready", f.timeout, ready, len(f.names))
		}
		if time.Since(lastLog) > 5*time.Second {
			fmt.Fprintf(os.Stderr, "  %.0fs: %d/%d Ready\n", time.Since(w.start).Seconds(), ready, len(f.names))
			lastLog = time.Now()
		}
		time.Sleep(20 * time.Millisecond)
	}
	allReady := time.Since(w.start)
	f.createReady = allReady
	f.createReadyAt = time.Now()
	if f.slices != nil {
		f.slices.phase.Store("after")
	}
	line, createSums := w.end(ctx)
	w.cost("create", len(f.names), createSums)
	f.stored(ctx, "create", f.namespaces[0], f.names[0])
	f.resultTransitions("ready")
	ratio, ratioAll := "n/a", "n/a"
	if f.floorTime > 0 {
		ratio = fmt.Sprintf("%.1f", float64(allReady)/float64(f.floorTime))
		ratioAll = fmt.Sprintf("%.1f", float64(allReady)/float64(f.floorAllTime))
	}
	f.result("create count=%d created_ms=%s all_ready_ms=%s x_floor=%s x_floor_all=%s %s", len(f.names), benchutil.Ms(created), benchutil.Ms(allReady), ratio, ratioAll, line)
	return nil
}

// setAllowance sets a requester's allowance in the limits ConfigMap to
// exactly -per-requester TeamSpaces and their pods (cpu and memory
// unbounded: the fleet's TeamSpaces leave memory out), so that every one
// fits and every sync does the whole count.
func (f *fleet) setAllowance(ctx context.Context) error {
	patch := fmt.Sprintf(`{"data":{"maxTeamSpacesPerRequester":"%d","maxPodsPerRequester":"%d","maxCPUPerRequester":"","maxMemoryPerRequester":""}}`,
		f.perRequester, f.perRequester*tsPods)
	_, err := f.c.Kube.CoreV1().ConfigMaps(v1alpha1.SystemNamespace).Patch(ctx, v1alpha1.LimitsName, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// statusTrail is what one TeamSpace's status went through, as this
// process's informer saw it: each distinct status is one status write of
// the engine (ignoreStatusChanges: it re-syncs on none of them).
type statusTrail struct {
	last     string   // the status, as JSON
	versions int      // distinct statuses seen, the first (none) included
	reasons  []string // the Ready condition's reason, each change once
}

// next is the trail after seeing ts (t may be nil: ts is new).
func (t *statusTrail) next(ts *unstructured.Unstructured) *statusTrail {
	if t == nil {
		t = &statusTrail{last: "-"}
	}
	st, _, _ := unstructured.NestedMap(ts.Object, "status")
	b, _ := json.Marshal(st)
	if string(b) == t.last {
		return t
	}
	t.last = string(b)
	t.versions++
	reason := "none"
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			reason = fmt.Sprint(m["reason"])
		}
	}
	if n := len(t.reasons); n == 0 || t.reasons[n-1] != reason {
		t.reasons = append(t.reasons, reason)
	}
	return t
}

// resultTransitions prints how many statuses the run's TeamSpaces went
// through from their creation until now (the engine's status writes; until:
// the phase, "ready" or "steady"), and their Ready reasons in order (the
// commonest sequence and how many followed it).
func (f *fleet) resultTransitions(until string) {
	f.readyMu.Lock()
	defer f.readyMu.Unlock()
	var total, most int
	seqs := map[string]int{}
	for _, n := range f.names {
		t := f.statuses[n]
		if t == nil {
			continue
		}
		total += t.versions - 1 // the first is the one it was created with
		most = max(most, t.versions-1)
		seqs[strings.Join(t.reasons, ">")]++
	}
	common, commonN := "", 0
	for seq, n := range seqs {
		if n > commonN || (n == commonN && seq < common) {
			common, commonN = seq, n
		}
	}
	f.result("transitions until=%s count=%d status_writes_per_teamspace=%.2f status_writes_max=%d sequences=%d commonest=%s commonest_n=%d",
		until, len(f.names), float64(total)/float64(len(f.names)), most, len(seqs), common, commonN)
}

// empty measures the setup with none of this run's TeamSpaces, nobody
// acting, over d: the base the steady window's cost at rest is compared
// with (above_empty_cores).
func (f *fleet) empty(ctx context.Context, d time.Duration) error {
	l, err := f.c.Dynamic.Resource(benchutil.TeamSpaces).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	if n := len(l.Items); n > 0 {
		return fmt.Errorf("the empty window needs a cluster without TeamSpaces, found %d", n)
	}
	w := f.begin(ctx)
	time.Sleep(d)
	line, sums := w.end(ctx)
	f.emptyCores = benchutil.Cores(w.cpu, sums.cpu, sums.secs)
	f.result("empty window_s=%.0f %s %s", sums.secs, benchutil.FormatCores(f.emptyCores, nil), line)
	return nil
}

// settle waits until the quota controller has finished its catch-up after
// the mass creation: no quota status write in a 5 s window (bounded by the
// timeout), so that the steady window measures rest, not its backlog.
func (f *fleet) settle(ctx context.Context) error {
	start := time.Now()
	for time.Since(start) < f.timeout {
		w := f.begin(ctx)
		time.Sleep(5 * time.Second)
		_, sums := w.end(ctx)
		if sums.quotaStatusWrites == 0 {
			fmt.Fprintf(os.Stderr, "  settled after %.0fs (no quota status write in 5s)\n", time.Since(start).Seconds())
			return nil
		}
	}
	return fmt.Errorf("quota status writes still going after %s", f.timeout)
}

func (f *fleet) steady(ctx context.Context, d time.Duration) error {
	if ready := f.readyCount(); ready != len(f.names) {
		return fmt.Errorf("not all Ready before the steady window (%d/%d)", ready, len(f.names))
	}
	w := f.begin(ctx)
	time.Sleep(d)
	line, sums := w.end(ctx)
	cores := benchutil.Cores(w.cpu, sums.cpu, sums.secs)
	f.result("steady count=%d window_s=%.0f %s %s", len(f.names), d.Seconds(), benchutil.FormatCores(cores, f.emptyCores), line)
	f.resultTransitions("steady")
	return nil
}

// quietPhase follows create at once: the minute after the last Ready
// (what the engine, the API server and the hook still spend, engine
// requests, hook calls), and how long after the last Ready the engine
// first spends under threshold cores over a 10 s window (bounded by the
// timeout).
func (f *fleet) quietPhase(ctx context.Context, threshold float64) error {
	if f.createReadyAt.IsZero() {
		return fmt.Errorf("quiet must follow create")
	}
	const step = 10 * time.Second
	w := f.begin(ctx)
	quietAfter := -1.0
	var minute string
	prev, prevAt := w.cpu, time.Now()
	for time.Since(f.createReadyAt) < f.timeout {
		time.Sleep(step)
		now, at := f.sampleCPU(), time.Now()
		if quietAfter < 0 && benchutil.Cores(prev, now, at.Sub(prevAt).Seconds())["engine"] < threshold {
			quietAfter = prevAt.Sub(f.createReadyAt).Seconds()
		}
		prev, prevAt = now, at
		if minute == "" && time.Since(w.start) >= time.Minute {
			line, sums := w.end(ctx)
			w.cost("quiet", len(f.names), sums)
			minute = benchutil.FormatCores(benchutil.Cores(w.cpu, sums.cpu, sums.secs), nil) + " " + line
		}
		if minute != "" && quietAfter >= 0 {
			break
		}
	}
	if minute == "" || quietAfter < 0 {
		return fmt.Errorf("the engine not under %g cores %s after the last Ready", threshold, f.timeout)
	}
	f.result("quiet count=%d quiet_cores=%g quiet_after_s=%.0f first_minute %s", len(f.names), threshold, quietAfter, minute)
	return nil
}

// churnWindow runs pod churn at rate pods/s and drift probes for d.
func (f *fleet) churnWindow(ctx context.Context, rate int, costWindow, d, podLife, gap time.Duration) error {
	cctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if rate > 0 {
		wg.Add(1)
		go func() { defer wg.Done(); f.churnPods(cctx, rate, podLife) }()
		if f.profileDir != "" && rate == f.profileChurn {
			// from the cost window into the probes: both are profiled
			go f.profile(ctx, fmt.Sprintf("churn%d", rate), 30*time.Second)
		}
		time.Sleep(3 * time.Second) // the churn reaches its rate
	}
	if rate == 0 {
		costWindow = 0 // the steady phase measures that
	}
	// What the churn alone costs, before any probe.
	w := f.begin(ctx)
	made1, deleted1, refused1 := f.podsMade.Load(), f.podsDeleted.Load(), f.podsRefused.Load()
	time.Sleep(costWindow)
	line, cost := w.end(ctx)
	secs := cost.secs
	made2, deleted2, refused2 := f.podsMade.Load(), f.podsDeleted.Load(), f.podsRefused.Load()
	podEvents := float64((made2 - made1) + (deleted2 - deleted1))
	perEvent := func(n float64) string {
		if podEvents == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", n/podEvents)
	}
	if rate > 0 {
		f.result("churn count=%d churn=%d window_s=%.0f pods_created_per_s=%.1f pods_deleted_per_s=%.1f pods_refused=%d engine_req_per_pod_event=%s teamspace_status_writes_per_pod_event=%s quota_status_writes_per_pod_event=%s %s",
			len(f.names), rate, secs, float64(made2-made1)/secs, float64(deleted2-deleted1)/secs, refused2-refused1,
			perEvent(cost.engine), perEvent(cost.statusWrites), perEvent(cost.quotaStatusWrites), line)
		// A churn whose pods are refused measures nothing: say so and stop.
		if refused2 > refused1 || made2 == made1 {
			stop()
			wg.Wait()
			f.deletePods(ctx)
			return fmt.Errorf("churn %d/s: %d pods created, %d refused in %.0f s (first: %v): the churn did not run", rate, made2-made1, refused2-refused1, secs, f.firstRefusal.Load())
		}
	}

	w = f.begin(ctx)
	deadline := time.Now().Add(d)
	samples, failures := f.probeUntil(ctx, func() bool { return !time.Now().Before(deadline) }, gap, "restore", "revert")
	line, probing := w.end(ctx)
	secs = probing.secs
	stop()
	wg.Wait()
	f.deletePods(ctx)
	for _, kind := range []string{"restore", "revert"} {
		s := benchutil.Summarise(samples[kind])
		f.result("drift count=%d churn=%d kind=%s n=%d p50_ms=%s p99_ms=%s max_ms=%s", len(f.names), rate, kind, s.N, benchutil.Ms(s.P50), benchutil.Ms(s.P99), benchutil.Ms(s.Max))
		fmt.Printf("SAMPLES fleet drift churn=%d kind=%s %s\n", rate, kind, benchutil.List(samples[kind]))
	}
	f.result("probing count=%d churn=%d window_s=%.0f probe_failures=%d %s", len(f.names), rate, secs, len(failures), line)
	if len(failures) > len(samples["restore"])/10+1 {
		return fmt.Errorf("%d drift probes failed, first: %s", len(failures), failures[0])
	}
	return nil
}

// restart stops and starts the engine and times the re-sync of every
// TeamSpace that its start makes (see phase 5), probing drift meanwhile.
func (f *fleet) restart(ctx context.Context, stopCmd, startCmd string, gap time.Duration) error {
	if err := f.stopEngine("restart", stopCmd, startCmd); err != nil {
		return err
	}
	// Begun with the engine stopped: its counters start again from zero.
	w := f.begin(ctx)
	syncs0, err := f.hookSyncs(ctx)
	if err != nil {
		return err
	}
	start, started, fresh, err := f.startEngine(startCmd)
	if err != nil {
		return err
	}
	// The engine is a new process: all its CPU is in the window (the
	// stopped one may not have been reaped at begin).
	for _, name := range fresh {
		w.cpu[name] = 0
	}

	probing, probed := make(chan struct{}), make(chan struct{})
	var samples map[string][]time.Duration
	var failures []string
	go func() {
		defer close(probed)
		stopped := func() bool {
			select {
			case <-probing:
				return true
			default:
				return false
			}
		}
		samples, failures = f.probeUntil(ctx, stopped, gap, "restore")
	}()
	deadline := time.Now().Add(f.timeout)
	var synced float64
	for {
		n, err := f.hookSyncs(ctx)
		if err != nil {
			return err
		}
		if synced = n - syncs0; synced >= float64(len(f.names)) {
			break
		}
		if time.Now().After(deadline) {
			close(probing)
			<-probed
			return fmt.Errorf("%g of %d TeamSpaces synced %s after the engine's start", synced, len(f.names), f.timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := time.Since(start)
	close(probing)
	<-probed
	line, _ := w.end(ctx)
	st := benchutil.Summarise(samples["restore"])
	f.result("restart count=%d start_s=%.1f all_synced_s=%.1f hook_syncs=%g restore_n=%d restore_p50_ms=%s restore_p99_ms=%s restore_max_ms=%s probe_failures=%d %s",
		len(f.names), started.Seconds(), all.Seconds(), synced, st.N, benchutil.Ms(st.P50), benchutil.Ms(st.P99), benchutil.Ms(st.Max), len(failures), line)
	if len(failures) > 0 {
		return fmt.Errorf("%d drift probes failed during the restart, first: %s", len(failures), failures[0])
	}
	return nil
}

// stopEngine stops the engine for a phase that starts it again, once every
// TeamSpace is Ready.
func (f *fleet) stopEngine(phase, stopCmd, startCmd string) error {
	if stopCmd == "" || startCmd == "" {
		return fmt.Errorf("%s needs -stop-cmd and -start-cmd", phase)
	}
	if ready := f.readyCount(); ready != len(f.names) {
		return fmt.Errorf("not all Ready before the %s (%d/%d)", phase, ready, len(f.names))
	}
	if err := benchutil.RunShell(stopCmd); err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	return nil
}

// startEngine starts the engine that stopEngine stopped and finds the
// setup's processes again, so that the memory report at the end is of the
// new engine. It returns when the start began, how long the start command
// took, and the names of the processes that are new.
func (f *fleet) startEngine(startCmd string) (time.Time, time.Duration, []string, error) {
	start := time.Now()
	if err := benchutil.RunShell(startCmd); err != nil {
		return start, 0, nil, fmt.Errorf("start: %w", err)
	}
	started := time.Since(start)
	fresh, err := f.findProcsAgain()
	return start, started, fresh, err
}

// findProcsAgain finds the setup's processes again and returns the names of
// those that are new.
func (f *fleet) findProcsAgain() ([]string, error) {
	if f.state == "" {
		return nil, nil
	}
	procs, err := benchutil.FindProcs(f.state)
	if err != nil {
		return nil, err
	}
	pids := map[string]int{}
	for _, p := range f.procs {
		pids[p.Name] = p.PID
	}
	var fresh []string
	for _, p := range procs {
		if pids[p.Name] != p.PID {
			fresh = append(fresh, p.Name)
		}
	}
	f.procs = procs
	return fresh, nil
}

// catchUp stops the engine, changes every spec.pods (tsPods to tsPods-1, or
// back), waits -down and starts the engine: time until every quota holds
// the new value and every TeamSpace is Ready for its new generation.
func (f *fleet) catchUp(ctx context.Context, stopCmd, startCmd string, down time.Duration) error {
	if f.extra > 0 {
		return fmt.Errorf("catchup changes spec.pods, which -namespaces divides: run it without")
	}
	pods := tsPods - 1
	if f.quotasWith(strconv.Itoa(pods)) == len(f.names) {
		pods = tsPods
	}
	want := strconv.Itoa(pods)
	if err := f.stopEngine("catchup", stopCmd, startCmd); err != nil {
		return err
	}
	stopped := time.Now()
	ts := f.c.Dynamic.Resource(benchutil.TeamSpaces)
	patch := []byte(fmt.Sprintf(`{"spec":{"pods":%d}}`, pods))
	if err := parallel(f.names, 32, func(n string) error {
		_, err := ts.Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "catchup: %d specs changed in %s; engine down for %s\n", len(f.names), time.Since(stopped).Round(time.Millisecond), down)
	time.Sleep(time.Until(stopped.Add(down)))
	if ready := f.readyCount(); ready != 0 {
		return fmt.Errorf("%d TeamSpaces Ready for their new generation with the engine stopped", ready)
	}
	start, started, _, err := f.startEngine(startCmd)
	if err != nil {
		return err
	}
	var allQuotas time.Duration
	deadline := start.Add(f.timeout)
	for {
		if allQuotas == 0 && f.quotasWith(want) == len(f.names) {
			allQuotas = time.Since(start)
		}
		if allQuotas != 0 && f.readyCount() == len(f.names) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d/%d quotas at pods=%s, %d/%d Ready", f.timeout, f.quotasWith(want), len(f.names), want, f.readyCount(), len(f.names))
		}
		time.Sleep(100 * time.Millisecond)
	}
	f.result("catchup count=%d engine_start_ms=%s all_quotas_ms=%s all_ready_ms=%s", len(f.names), benchutil.Ms(started), benchutil.Ms(allQuotas), benchutil.Ms(time.Since(start)))
	return nil
}

// quotasWith counts the fleet's quotas whose spec.hard.pods is want.
func (f *fleet) quotasWith(want string) int {
	n := 0
	for _, o := range f.quotas.List() {
		q, ok := o.(*corev1.ResourceQuota)
		if ok && strings.HasPrefix(q.Namespace, "team-"+f.prefix+"-") && !strings.Contains(q.Namespace, "--") && hardPods(q.Spec.Hard) == want {
			n++
		}
	}
	return n
}

// hookSyncs is how many sync requests the hook has answered.
func (f *fleet) hookSyncs(ctx context.Context) (float64, error) {
	if f.hookURL == "" {
		return 0, fmt.Errorf("restart needs -hook-metrics")
	}
	c, err := benchutil.Scrape(ctx, benchutil.HTTPGetter(f.hookURL), func(l string) bool {
		return isHookCall(l) && strings.Contains(l, `hook="sync"`)
	})
	if err != nil {
		return 0, fmt.Errorf("hook metrics: %w", err)
	}
	var n float64
	for _, v := range c {
		n += v
	}
	return n, nil
}

// probeUntil runs drift probes on TeamSpaces picked at random, of kinds
// in turn, gap apart, until done: the samples by kind and the failures.
func (f *fleet) probeUntil(ctx context.Context, done func() bool, gap time.Duration, kinds ...string) (map[string][]time.Duration, []string) {
	samples := map[string][]time.Duration{}
	var failures []string
	for i := 0; !done(); i++ {
		name, kind := f.names[rand.IntN(len(f.names))], kinds[i%len(kinds)]
		took, err := f.probe(ctx, kind, name)
		if err != nil {
			failures = append(failures, fmt.Sprintf("%s %s: %v", kind, name, err))
			fmt.Fprintf(os.Stderr, "  probe %s %s failed: %v\n", kind, name, err)
		} else {
			samples[kind] = append(samples[kind], took)
		}
		time.Sleep(gap)
	}
	return samples, failures
}

func hardPods(rl corev1.ResourceList) string {
	q, ok := rl[corev1.ResourcePods]
	if !ok {
		return "<none>"
	}
	return q.String()
}

// probe breaks one TeamSpace's quota and times until the informer shows it
// repaired: restore deletes it (done when one holding spec.pods is added),
// revert patches spec.hard.pods to 99 (done when the value is back).
func (f *fleet) probe(ctx context.Context, kind, name string) (time.Duration, error) {
	ns := "team-" + name
	want := strconv.Itoa(f.mainPods())
	// lastUID is the quota about to be deleted, read before the delete: read
	// after it, a repair faster than this goroutine (2 busy cores) had
	// already put the new quota's uid there, and the probe waited in vain.
	var lastUID types.UID
	// settled: the quota holds the TeamSpace's value
	settleBy := time.Now().Add(10 * time.Second)
	for {
		obj, ok, _ := f.quotas.GetByKey(ns + "/" + quotaName)
		if ok && hardPods(obj.(*corev1.ResourceQuota).Spec.Hard) == want {
			lastUID = obj.(*corev1.ResourceQuota).UID
			break
		}
		if time.Now().After(settleBy) {
			return 0, fmt.Errorf("quota %s/%s not settled", ns, quotaName)
		}
		time.Sleep(10 * time.Millisecond)
	}
	ch := make(chan *corev1.ResourceQuota, 64)
	f.probesMu.Lock()
	f.probes[ns] = ch
	f.probesMu.Unlock()
	defer func() {
		f.probesMu.Lock()
		delete(f.probes, ns)
		f.probesMu.Unlock()
	}()
	quotas := f.c.Kube.CoreV1().ResourceQuotas(ns)
	start := time.Now()
	var err error
	broken := false
	if kind == "restore" {
		err = quotas.Delete(ctx, quotaName, metav1.DeleteOptions{})
	} else {
		_, err = quotas.Patch(ctx, quotaName, types.MergePatchType, []byte(`{"spec":{"hard":{"pods":"99"}}}`), metav1.PatchOptions{})
	}
	if err != nil {
		return 0, err
	}
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	for {
		select {
		case q := <-ch:
			pods := hardPods(q.Spec.Hard)
			switch kind {
			case "restore":
				if q.UID != lastUID && pods == want {
					return time.Since(start), nil
				}
			case "revert":
				if pods == "99" {
					broken = true
				} else if broken && pods == want {
					return time.Since(start), nil
				}
			}
		case <-timer.C:
			return 0, fmt.Errorf("not repaired within 30s")
		}
	}
}

// churnPods creates rate pods per second across the TeamSpaces in turn and
// deletes each podLife after its creation, until ctx ends.
func (f *fleet) churnPods(ctx context.Context, rate int, podLife time.Duration) {
	type made struct {
		ns, name string
		at       time.Time
	}
	creates := make(chan int, rate)
	deletes := make(chan made, 4*rate+16)
	var creators, deleters sync.WaitGroup
	workers := rate/5 + 2
	for w := 0; w < workers; w++ {
		creators.Add(1)
		go func() {
			defer creators.Done()
			for k := range creates {
				ns := f.namespaces[k%len(f.namespaces)]
				name := fmt.Sprintf("churn-%d", k)
				if _, err := f.c.Kube.CoreV1().Pods(ns).Create(ctx, churnPod(name), metav1.CreateOptions{}); err != nil {
					if ctx.Err() == nil {
						log.Printf("churn: create %s/%s: %v", ns, name, err)
						f.podsRefused.Add(1)
						f.firstRefusal.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				f.podsMade.Add(1)
				select {
				case deletes <- made{ns, name, time.Now()}:
				default: // deletePods sweeps it
				}
			}
		}()
		deleters.Add(1)
		go func() {
			defer deleters.Done()
			for m := range deletes {
				time.Sleep(time.Until(m.at.Add(podLife)))
				if err := f.c.Kube.CoreV1().Pods(m.ns).Delete(context.Background(), m.name, metav1.DeleteOptions{}); err == nil {
					f.podsDeleted.Add(1)
				}
			}
		}()
	}
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for k := 0; ; k++ {
		select {
		case <-ctx.Done():
			close(creates)
			creators.Wait()
			close(deletes)
			deleters.Wait()
			return
		case <-tick.C:
			select {
			case creates <- k:
			default: // the creators fall behind: the rate reported says so
			}
		}
	}
}

// churnPod is a pod Pod Security "restricted" admits; the LimitRange gives
// it its cpu request. No kubelet runs it: it stays Pending until deleted.
func churnPod(name string) *corev1.Pod {
	no, yes := false, true
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"teamspace-bench": "churn"}},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{Name: "c", Image: "registry.invalid/none",
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		},
	}
}

// deletePods deletes every churn pod left (a deleter that fell behind).
func (f *fleet) deletePods(ctx context.Context) {
	for _, ns := range f.namespaces {
		_ = f.c.Kube.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "teamspace-bench=churn"})
	}
}

// cleanup deletes what this run made: churn pods, TeamSpaces (their
// namespaces go with them), floor namespaces; and waits up to wait.
func (f *fleet) cleanup(wait time.Duration) {
	f.cleanupOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait+time.Minute)
		defer cancel()
		start := time.Now()
		if f.madeFloor {
			if _, err := f.deleteFloor(ctx, 0); err != nil {
				log.Printf("cleanup: floor: %v", err)
			}
		}
		if !f.madeTeams {
			return
		}
		f.deletePods(ctx)
		ts := f.c.Dynamic.Resource(benchutil.TeamSpaces)
		_ = parallel(f.names, 16, func(n string) error {
			err := ts.Delete(ctx, n, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				log.Printf("cleanup: delete TeamSpace %s: %v", n, err)
			}
			return nil
		})
		for time.Since(start) < wait {
			left := 0
			for _, n := range f.names {
				if _, ok, _ := f.ts.GetByKey(n); ok {
					left++
				}
			}
			if left == 0 {
				fmt.Fprintf(os.Stderr, "cleanup: every TeamSpace gone after %s\n", time.Since(start).Round(time.Second))
				return
			}
			time.Sleep(time.Second)
		}
		if wait > 0 {
			log.Printf("cleanup: TeamSpaces still deleting after %s (the engine finalizes them)", wait)
		}
	})
}

// entries is spec.namespaces of -namespaces entries, e1 with e1CPU
// millicores, the others entryCPU.
func (f *fleet) entries(e1CPU int) []any {
	var out []any
	for e := 1; e <= f.extra; e++ {
		cpu := entryCPU
		if e == 1 {
			cpu = e1CPU
		}
		out = append(out, map[string]any{"name": fmt.Sprintf("e%d", e), "pods": entryPods, "cpu": fmt.Sprintf("%dm", cpu)})
	}
	return out
}

// mainPods is team-<name>'s share of spec.pods.
func (f *fleet) mainPods() int { return tsPods - f.extra*entryPods }

// move is the cost of a share moved between two namespaces (issue #52):
// in every TeamSpace, 100m of cpu from e1 to team-<name> (one spec
// write each), timed until every one of both quotas holds its new share,
// and until all are Ready for their new generation; the engine's
// requests and the CPU in that window.
func (f *fleet) move(ctx context.Context) error {
	if f.extra == 0 {
		fmt.Fprintln(os.Stderr, "move: nothing to move without -namespaces")
		return nil
	}
	if ready := f.readyCount(); ready != len(f.names) {
		return fmt.Errorf("not all Ready before the move (%d/%d)", ready, len(f.names))
	}
	e1 := entryCPU - 100
	mainCPU := resource.MustParse(tsCPU)
	mainCPU.Sub(*resource.NewMilliQuantity(int64(f.extra-1)*entryCPU+int64(e1), resource.DecimalSI))
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"namespaces": f.entries(e1)}})
	if err != nil {
		return err
	}
	ts := f.c.Dynamic.Resource(benchutil.TeamSpaces)
	w := f.begin(ctx)
	if err := parallel(f.names, 32, func(n string) error {
		_, err := ts.Patch(ctx, n, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	}); err != nil {
		return err
	}
	written := time.Since(w.start)
	wantE1 := resource.NewMilliQuantity(int64(e1), resource.DecimalSI).String()
	moved := func() int {
		n := 0
		for _, name := range f.names {
			q1, ok1, _ := f.quotas.GetByKey("team-" + name + "--e1/" + quotaName)
			q0, ok0, _ := f.quotas.GetByKey("team-" + name + "/" + quotaName)
			if ok1 && ok0 {
				c1 := q1.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourceRequestsCPU]
				c0 := q0.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourceRequestsCPU]
				if c1.String() == wantE1 && c0.Cmp(mainCPU) == 0 {
					n++
				}
			}
		}
		return n
	}
	var allQuotas time.Duration
	deadline := w.start.Add(f.timeout)
	for {
		if allQuotas == 0 && moved() == len(f.names) {
			allQuotas = time.Since(w.start)
		}
		if allQuotas != 0 && f.readyCount() == len(f.names) {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("after %s: %d/%d moved, %d/%d Ready", f.timeout, moved(), len(f.names), f.readyCount(), len(f.names))
		}
		time.Sleep(50 * time.Millisecond)
	}
	allReady := time.Since(w.start)
	line, _ := w.end(ctx)
	f.result("move count=%d namespaces=%d specs_written_ms=%s all_quotas_ms=%s all_ready_ms=%s %s", len(f.names), f.extra+1, benchutil.Ms(written), benchutil.Ms(allQuotas), benchutil.Ms(allReady), line)
	return nil
}
