package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/labhub/teamspace/tests/robust"
	"github.com/labhub/teamspace/tests/s3store"
)

// The fault run's knobs (issue #67). The suite runs the short run of the
// defaults; hack/bench.sh faults the long one (1000 TeamSpaces, 20 min).
const (
	faultCountEnv = "FAULT_RUN_COUNT" // TeamSpaces created before the faults [100]
	faultForEnv   = "FAULT_RUN_FOR"   // how long faults are injected [150s]
	faultSeedEnv  = "FAULT_RUN_SEED"  // the seed of faults and operations [67]
	faultOpsEnv   = "FAULT_RUN_OPS"   // operations per second [2]
)

func envOr(t *testing.T, name, def string) string {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// TestFaultRun: the fleet on the HA layout (hack/up.sh --ha: two engines
// with leader election, two hooks behind one URL, the archive in an S3
// bucket, the control plane supervised as systemd would) under seeded
// random faults while a workload creates, changes and deletes TeamSpaces,
// moves shares, removes and releases namespaces, makes pods and edits
// children by hand. Then the invariants of tests/robust over the history
// and over the converged state; any violation fails the run, printed with
// the objects involved. FAULT_RUN_SEED replays a run.
func TestFaultRun(t *testing.T) {
	if os.Getenv("WALKTHROUGH_CLUSTER") == "current" {
		t.Skip("WALKTHROUGH_CLUSTER=current: a fault run kills the processes of a setup of its own")
	}
	count, err := strconv.Atoi(envOr(t, faultCountEnv, "100"))
	if err != nil {
		t.Fatal(err)
	}
	length, err := time.ParseDuration(envOr(t, faultForEnv, "150s"))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := strconv.ParseUint(envOr(t, faultSeedEnv, "67"), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	rate, err := strconv.ParseFloat(envOr(t, faultOpsEnv, "2"), 64)
	if err != nil || rate <= 0 {
		t.Fatalf("%s: %v", faultOpsEnv, err)
	}
	srv := s3store.Start(t)
	w := setUp(t, "TEAMSPACE_HA=1", "TEAMSPACE_NO_DEMO=1", "HOOK_ARCHIVE_ARGS="+strings.Join(srv.Flags("archive"), " "))
	w.timeout = 5 * time.Minute
	f := &faultRun{w: w, srv: srv, state: w.env["TEAMSPACE_STATE"]}
	t.Cleanup(f.healAll)
	schedule := robust.Schedule(seed, length)
	t.Logf("seed %d, %d TeamSpaces, %s of faults, %.1f operations/s; schedule:", seed, count, length, rate)
	for _, ft := range schedule {
		t.Logf("  %s", ft)
	}

	wl := &robust.Workload{Kube: w.kube, Dynamic: w.dyn, Prefix: "fr", Seed: seed}
	t0 := time.Now()
	if err := wl.Populate(w.ctx, count); err != nil {
		t.Fatalf("creating %d TeamSpaces: %v", count, err)
	}
	if left := f.waitReady(fmt.Sprintf("all %d TeamSpaces Ready", count), wl.Live); left != "" {
		t.Fatal(left)
	}
	t.Logf("%d TeamSpaces Ready %s after the first create", count, time.Since(t0).Round(100*time.Millisecond))

	rec := &robust.Recorder{Kube: w.kube, Dynamic: w.dyn, Archive: robust.DirArchive(filepath.Join(srv.Root, srv.Bucket, "archive")), Interval: 500 * time.Millisecond}
	recCtx, stopRec := context.WithCancel(w.ctx)
	recDone := make(chan error, 1)
	go func() { recDone <- rec.Run(recCtx) }()
	defer stopRec()
	f.memory(rec)

	opsCtx, stopOps := context.WithCancel(w.ctx)
	opsDone := make(chan struct{})
	go func() { wl.Run(opsCtx, time.Duration(float64(time.Second)/rate)); close(opsDone) }()
	defer stopOps()

	start := time.Now()
	for _, ft := range schedule {
		select {
		case <-time.After(time.Until(start.Add(ft.At))):
		case <-w.ctx.Done():
			t.Fatal("out of time")
		}
		at := time.Now()
		until := f.inject(t, ft)
		rec.Add(robust.Event{At: at, Kind: robust.FaultInjected, Key: string(ft.Target), Until: until})
		t.Logf("+%s %s#%d hit, whole again %s later", at.Sub(start).Round(time.Millisecond), ft.Target, ft.Which, until.Sub(at).Round(time.Millisecond))
	}
	time.Sleep(time.Until(start.Add(length)))
	stopOps()
	<-opsDone
	last := time.Now()
	// Not converging is a finding like any violation: the history, the
	// operations and the invariants are still saved and checked.
	notConverged := f.waitReady("every live TeamSpace Ready after the last fault", wl.Live)
	converged := time.Since(last)
	time.Sleep(3 * time.Second) // the recorder's samples of the converged state
	f.memory(rec)
	stopRec()
	if err := <-recDone; err != nil {
		t.Fatal(err)
	}

	h := rec.History()
	final, err := robust.ReadFinal(w.ctx, w.kube, w.dyn)
	if err != nil {
		t.Fatal(err)
	}
	bounds := robust.Bounds{QuotaGap: 60 * time.Second, ReadyAfterFaults: 60 * time.Second, MemoryGrowth: 3}
	for _, e := range robust.Writes(wl.Ops()) {
		h.Add(e)
	}
	violations := append(robust.Check(h, bounds), robust.CheckFinal(final)...)
	f.save(t, h, wl.Ops(), schedule)
	f.report(t, seed, count, length, h, wl.Ops(), converged, bounds)
	if notConverged != "" {
		t.Error(notConverged)
	}
	for _, v := range violations {
		t.Errorf("%s", v)
	}
	if len(violations) > 0 || notConverged != "" {
		t.Logf("replay with %s=%d %s=%d %s=%s (history and operations in %s)", faultSeedEnv, seed, faultCountEnv, count, faultForEnv, length, f.evidence())
	}
}

// faultRun is what the injector acts on.
type faultRun struct {
	w       *walk
	srv     *s3store.Server
	state   string
	stopped []int // hooks stopped with SIGSTOP, continued by heal
}

// pid is the PID in a PID file of the setup (up/run/NAME.pid, or the
// control plane's run/NAME.pid), 0 when there is none.
func (f *faultRun) pid(file string) int {
	n, _ := readPID(filepath.Join(f.state, file))
	return n
}

// inject hits the target of ft, keeps it down for ft.For where the run
// restarts it itself (the engines, the hooks, the S3 server) or until the
// control plane's supervisor has it back, and returns when it is whole.
func (f *faultRun) inject(t *testing.T, ft robust.Fault) time.Time {
	t.Helper()
	kill := func(file string) int {
		pid := f.pid(file)
		if pid == 0 {
			t.Fatalf("no PID in %s", file)
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Logf("killing %s (%d): %v", file, pid, err)
		}
		return pid
	}
	upsh := func(args ...string) {
		ctx, cancel := context.WithTimeout(f.w.ctx, 90*time.Second)
		defer cancel()
		if out, err := script(ctx, f.w.repo, filepath.Join(f.w.out, "faults-up.log"), []string{"TEAMSPACE_STATE=" + f.state}, "hack/up.sh", args...); err != nil {
			t.Fatalf("hack/up.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	hook := []string{"hook", "hook-b"}[ft.Which]
	switch ft.Target {
	case robust.LeadingEngine:
		lead := f.w.leadingEngine(t)
		if lead == "" {
			lead = "metacontroller" // between two leaders: hit a
		}
		kill("up/run/" + lead + ".pid")
		time.Sleep(ft.For)
		upsh("engine-start", map[string]string{"metacontroller": "a", "metacontroller-b": "b"}[lead])
	case robust.Hook:
		kill("up/run/" + hook + ".pid")
		time.Sleep(ft.For)
		upsh("hook-start", map[string]string{"hook": "a", "hook-b": "b"}[hook])
	case robust.APIServer, robust.ControllerManager, robust.Datastore:
		name := string(ft.Target)
		if ft.Target == robust.Datastore {
			name = "kine"
			if _, err := os.Stat(filepath.Join(f.state, "run", "etcd.pid")); err == nil {
				name = "etcd"
			}
		}
		old := kill("run/" + name + ".pid")
		deadline := time.Now().Add(2 * time.Minute)
		for {
			if p := f.pid("run/" + name + ".pid"); p != 0 && p != old && syscall.Kill(p, 0) == nil {
				if _, err := f.w.kube.Discovery().ServerVersion(); err == nil {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not back 2 min after it was killed", name)
			}
			time.Sleep(100 * time.Millisecond)
		}
	case robust.ArchiveStore:
		f.srv.Kill(t)
		time.Sleep(ft.For)
		f.srv.StartAgain(t)
	case robust.ArchiveRefusesWrites:
		f.srv.Stop(t)
		f.srv.StartReadOnly(t)
		time.Sleep(ft.For)
		f.srv.Stop(t)
		f.srv.StartAgain(t)
	case robust.HookStallsPastTimeout:
		pid := f.pid("up/run/" + hook + ".pid")
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			t.Fatalf("stopping %s: %v", hook, err)
		}
		f.stopped = append(f.stopped, pid)
		time.Sleep(ft.For)
		f.healAll()
	default:
		t.Fatalf("unknown target %s", ft.Target)
	}
	return time.Now()
}

// healAll continues every hook stopped: a run that ends mid-stall leaves
// nothing stopped behind.
func (f *faultRun) healAll() {
	for _, pid := range f.stopped {
		_ = syscall.Kill(pid, syscall.SIGCONT)
	}
	f.stopped = nil
}

// notReady is the TeamSpaces of names that exist and are not Ready for
// their current generation, from one list (a fleet of a thousand).
func (f *faultRun) notReady(names []string) []string {
	list, err := f.w.dyn.Resource(teamSpaces).List(f.w.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{"(list: " + err.Error() + ")"}
	}
	byName := map[string]*unstructured.Unstructured{}
	for i := range list.Items {
		byName[list.Items[i].GetName()] = &list.Items[i]
	}
	var out []string
	for _, n := range names {
		ts, ok := byName[n]
		if !ok || ts.GetDeletionTimestamp() != nil {
			continue
		}
		if !observedCurrentOf(ts) || !robust.Ready(ts) {
			out = append(out, n)
		}
	}
	return out
}

// waitReady lists the TeamSpaces every second until every one of names
// is Ready for its generation, up to the walk's timeout; else it says
// which are not and why (their Ready condition).
func (f *faultRun) waitReady(what string, names func() []string) string {
	deadline := time.Now().Add(f.w.timeout)
	for {
		left := f.notReady(names())
		if len(left) == 0 {
			return ""
		}
		if time.Now().After(deadline) || f.w.ctx.Err() != nil {
			var why []string
			for _, n := range left[:min(len(left), 10)] {
				reason, msg := f.w.readyReason(n)
				why = append(why, fmt.Sprintf("%s: %s: %.300s", n, reason, msg))
			}
			return fmt.Sprintf("timed out after %s waiting for %s: %d not Ready:\n%s", f.w.timeout, what, len(left), strings.Join(why, "\n"))
		}
		time.Sleep(time.Second)
	}
}

// memory adds a memory sample of each engine and hook to the history.
func (f *faultRun) memory(rec *robust.Recorder) {
	for _, p := range []string{"hook", "hook-b", "metacontroller", "metacontroller-b"} {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", f.pid("up/run/"+p+".pid")))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				rec.Add(robust.Event{At: time.Now(), Kind: robust.MemorySample, Key: p, Bytes: kb * 1024})
			}
		}
	}
}

// evidence is where the run's history goes: WALKTHROUGH_OUT when set
// (hack/bench.sh faults), else beside the setup's state, which is kept
// when the test fails (startSetup) and removed when it passes: a test's
// own temporary directory would be gone with the evidence of a failure.
func (f *faultRun) evidence() string {
	if os.Getenv("WALKTHROUGH_OUT") != "" {
		return f.w.out
	}
	return filepath.Dir(f.state)
}

// save writes the history, the operations and the schedule to the
// evidence directory: what a failing run is read from.
func (f *faultRun) save(t *testing.T, h *robust.History, ops []robust.Op, schedule []robust.Fault) {
	t.Helper()
	for name, v := range map[string]any{"fault-history.json": h, "fault-operations.json": ops, "fault-schedule.json": schedule} {
		b, err := json.MarshalIndent(v, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(f.evidence(), name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// report prints the run's figures (BENCHMARKS.md): operations done,
// faults by kind, records written, the longest a TeamSpace was not Ready
// after a fault, the longest quota gap, the time to converge.
func (f *faultRun) report(t *testing.T, seed uint64, count int, length time.Duration, h *robust.History, ops []robust.Op, converged time.Duration, b robust.Bounds) {
	t.Helper()
	byKind, failed := map[string]int{}, 0
	for _, o := range ops {
		byKind[o.Kind]++
		if o.Err != "" {
			failed++
		}
	}
	faults, records := map[string]int{}, 0
	for _, e := range h.Events {
		switch e.Kind {
		case robust.FaultInjected:
			faults[e.Key]++
		case robust.RecordStored:
			records++
		}
	}
	var gap time.Duration
	var gapNS string
	for ns, g := range robust.QuotaGaps(h) {
		if g > gap {
			gap, gapNS = g, ns
		}
	}
	notReady, notReadyTS := robust.LongestNotReady(h)
	kv := func(m map[string]int) string {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(m)) {
			parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
		}
		return strings.Join(parts, ",")
	}
	t.Logf("RESULT fault-run seed=%d count=%d faults_for=%s operations=%d failed_operations=%d ops=%s faults=%s records=%d longest_not_ready_ms=%d (%s) longest_quota_gap_ms=%d (%s) converge_after_last_fault_ms=%d bounds=quota_gap:%s,ready:%s,memory:%.1fx",
		seed, count, length, len(ops), failed, kv(byKind), kv(faults), records, notReady.Milliseconds(), notReadyTS, gap.Milliseconds(), gapNS, converged.Milliseconds(), b.QuotaGap, b.ReadyAfterFaults, b.MemoryGrowth)
}
