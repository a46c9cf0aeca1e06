package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHALayout: hack/up.sh --ha, the layout of several servers on one
// machine (issue #67): two engines with leader election, two hooks behind
// one URL. The leading engine and a hook killed with SIGKILL, a new
// TeamSpace becomes Ready all the same (the standby takes the lease when it
// expires), answered by the other hook; both start again with
// engine-start a and hook-start a.
func TestHALayout(t *testing.T) {
	if os.Getenv("WALKTHROUGH_CLUSTER") == "current" {
		t.Skip("WALKTHROUGH_CLUSTER=current: the running setup's layout is what it is")
	}
	w := setUp(t, "TEAMSPACE_HA=1", "TEAMSPACE_NO_DEMO=1")
	run := filepath.Join(w.env["TEAMSPACE_STATE"], "up", "run")
	pid := func(name string) int {
		n, err := readPID(filepath.Join(run, name+".pid"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return n
	}
	for _, p := range []string{"hook", "hook-b", "metacontroller", "metacontroller-b"} {
		if err := syscall.Kill(pid(p), 0); err != nil {
			t.Fatalf("%s is not running: %v", p, err)
		}
	}
	// Which engine leads: its metrics say (controller-runtime's
	// leader_election_master_status).
	w.poll(t, "one engine leading", func() bool { return w.leadingEngine(t) != "" })
	lead := w.leadingEngine(t)
	for _, p := range []string{lead, "hook"} {
		if err := syscall.Kill(pid(p), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now()
	w.createTeamSpace(t, "ha", 2, "")
	t.Cleanup(func() { _ = w.dyn.Resource(teamSpaces).Delete(w.ctx, "ha", metav1.DeleteOptions{}) })
	w.poll(t, "ha Ready with the leading engine and a hook killed", func() bool { return w.observedCurrent("ha") && w.ready("ha") })
	t.Logf("Ready %s after the leading engine (%s) and hook a were killed", time.Since(t0).Round(100*time.Millisecond), lead)
	w.report["ha_ready_after_kill_seconds"] = time.Since(t0).Seconds()

	instance := map[string]string{"metacontroller": "a", "metacontroller-b": "b"}[lead]
	for _, args := range [][]string{{"engine-start", instance}, {"hook-start", "a"}} {
		cmd := exec.CommandContext(w.ctx, filepath.Join(w.repo, "hack", "up.sh"), args...)
		cmd.Env = append(os.Environ(), "TEAMSPACE_STATE="+w.env["TEAMSPACE_STATE"])
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("hack/up.sh %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, p := range []string{"hook", "hook-b", "metacontroller", "metacontroller-b"} {
		if err := syscall.Kill(pid(p), 0); err != nil {
			t.Errorf("%s is not running again: %v", p, err)
		}
	}
}

// readPID reads a PID file of the setup: hack/up.sh's (up/run/NAME.pid)
// or the control plane's (run/NAME.pid).
func readPID(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// leadingEngine is the PID file name of the engine that leads ("" while
// neither does).
func (w *walk) leadingEngine(t *testing.T) string {
	t.Helper()
	env := map[string]string{}
	b, err := os.ReadFile(filepath.Join(w.env["TEAMSPACE_STATE"], "up", "up.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = strings.Trim(v, `'"`)
		}
	}
	for name, port := range map[string]string{"metacontroller": env["TEAMSPACE_ENGINE_METRICS_PORT"], "metacontroller-b": env["TEAMSPACE_ENGINE_B_METRICS_PORT"]} {
		out, err := exec.Command("curl", "-fsS", "--max-time", "1", "http://127.0.0.1:"+port+"/metrics").Output()
		if err == nil && strings.Contains(string(out), `leader_election_master_status{name="metacontroller"} 1`) {
			return name
		}
	}
	return ""
}
