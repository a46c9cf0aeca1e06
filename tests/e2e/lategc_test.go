package e2e

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stepLateGarbageCollector: the LimitRange of team-alpha deleted by hand
// while the garbage collector is held up (kube-controller-manager stopped
// with SIGSTOP, as when it restarts): the engine makes the LimitRange
// again at once, but its quota is still there, owned by the LimitRange
// that is gone, so the engine's create of team-quota is refused as
// AlreadyExists (which it swallows). When the collector runs again and
// deletes that quota, team-quota must come back within seconds: the
// quotas hook asks for another sync while a quota is missing
// (QuotaMissingRetrySeconds). Without it the namespace stayed without
// quota until its resync, hours later (found by the fault run, #67).
func stepLateGarbageCollector(t *testing.T, w *walk) {
	pidFile := filepath.Join(w.env["TEAMSPACE_STATE"], "run", "kube-controller-manager.pid")
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Skipf("no PID of kube-controller-manager (%v): a setup of hack/cluster.sh has it", err)
	}
	kcm, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	const ns, lr = "team-alpha", "team-defaults"
	oldQuota, ok := w.quota(ns)
	if !ok {
		t.Fatal("no quota in team-alpha")
	}
	oldLR, err := w.kube.CoreV1().LimitRanges(ns).Get(w.ctx, lr, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(kcm, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := true
	cont := func() {
		if stopped {
			_ = syscall.Kill(kcm, syscall.SIGCONT)
			stopped = false
		}
	}
	t.Cleanup(cont)
	if err := w.kube.CoreV1().LimitRanges(ns).Delete(w.ctx, lr, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w.poll(t, "team-defaults made again", func() bool {
		l, err := w.kube.CoreV1().LimitRanges(ns).Get(w.ctx, lr, metav1.GetOptions{})
		return err == nil && l.UID != oldLR.UID
	})
	time.Sleep(2 * time.Second) // the engine's create of team-quota is refused meanwhile
	if q, ok := w.quota(ns); !ok || q.UID != oldQuota.UID {
		t.Fatalf("team-quota changed while the garbage collector was stopped: %v", q)
	}
	cont()
	gone := w.poll(t, "the old team-quota collected", func() bool {
		q, ok := w.quota(ns)
		return !ok || q.UID != oldQuota.UID
	})
	back := w.poll(t, "team-quota made again", func() bool {
		q, ok := w.quota(ns)
		return ok && q.UID != oldQuota.UID
	})
	t.Logf("team-quota back %s after the old one was collected", back.Sub(gone).Round(10*time.Millisecond))
	if d := back.Sub(gone); d > 10*time.Second {
		t.Errorf("team-quota back %s after the old one was collected, want within 10 s", d)
	}
	w.poll(t, "alpha Ready", func() bool { return w.ready("alpha") })
	w.report["quota_back_after_late_gc_seconds"] = back.Sub(gone).Seconds()
}
