package deploy

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// engineBinary is the real engine, or a stub built for the test (real
// reports whether it is the real engine).
func engineBinary(t *testing.T) (bin string, real bool) {
	t.Helper()
	if b := testenv.Engine(t, "tests/deploy: install.sh and uninstall.sh run a stub engine; no TeamSpace is reconciled or deleted through them"); b != "" {
		return b, true
	}
	return testenv.StubEngine(t), false
}

// deployScript runs hack/deploy/<script> with env.
func deployScript(t *testing.T, env []string, script string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	r := runCmd(ctx, repoRoot(t), env, nil, filepath.Join(repoRoot(t), "hack", "deploy", script), args...)
	t.Logf("%s %s:\n%s", script, strings.Join(args, " "), r.stderr)
	return r
}

func pidOf(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("pid file: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", file, err)
	}
	return pid
}

// alive reports whether process pid runs: it is in the process table and
// not a zombie (an orphan that exited and that PID 1, which on some hosts
// takes its time, has not reaped yet: seen as a flake of
// TestInstallUninstall's "left the old process running").
func alive(pid int) bool {
	f, ok := statFields(pid)
	return ok && (len(f) == 0 || f[0] != "Z")
}

// statFields are the fields of /proc/PID/stat from the third, the state, on
// (the command name before it is in parentheses and may hold spaces: "pid
// (comm) S ..."); ok is false when the process is gone.
func statFields(pid int) (fields []string, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, false
	}
	s := string(stat)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:]), true
}

func httpOK(url string) error {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: status %d", url, resp.StatusCode)
	}
	return nil
}

// testInstall is one SERVICE_MANAGER=none install into a temporary DESTDIR
// on free ports: the environment for install.sh and uninstall.sh, where its
// pid files go, and whether the engine is the real one.
type testInstall struct {
	env          []string
	destdir, run string
	real         bool
	hookAddr     string
	// started are the processes install.sh started (recordStarted), for
	// stopStarted.
	started []process
}

// process is a process by PID and start time (field 22 of /proc/PID/stat),
// so that a PID used again by another process is not taken for it.
type process struct {
	name  string
	pid   int
	start string
}

// startTime is the start time of pid ("" when it is gone).
func startTime(pid int) string {
	if f, _ := statFields(pid); len(f) >= 20 {
		return f[19]
	}
	return ""
}

// recordStarted records the hook and engine install.sh just started (its
// pid files).
func (in *testInstall) recordStarted(t *testing.T) {
	t.Helper()
	for _, u := range []string{"teamspace-hook", "metacontroller"} {
		pid := pidOf(t, filepath.Join(in.run, u+".pid"))
		in.started = append(in.started, process{name: u, pid: pid, start: startTime(pid)})
	}
}

// stopStarted stops, with SIGTERM and after 10 s SIGKILL, every process
// recordStarted recorded that still runs, whatever uninstall.sh did: a
// cleanup whose uninstall.sh refuses (a TeamSpace still deleting) must not
// leave the hook and the engine running after the test.
func (in *testInstall) stopStarted(t *testing.T) {
	t.Helper()
	for _, p := range in.started {
		if startTime(p.pid) != p.start || !alive(p.pid) {
			continue
		}
		t.Logf("stopping %s (pid %d), which uninstall.sh left running", p.name, p.pid)
		_ = syscall.Kill(p.pid, syscall.SIGTERM)
		if !testenv.Eventually(10*time.Second, 100*time.Millisecond, func() bool { return !alive(p.pid) || startTime(p.pid) != p.start }) {
			_ = syscall.Kill(p.pid, syscall.SIGKILL)
		}
	}
}

func newInstall(t *testing.T, crds string) testInstall {
	t.Helper()
	engine, real := engineBinary(t)
	destdir := t.TempDir()
	hookAddr, metricsAddr, healthAddr := freePort(t), freePort(t), freePort(t)
	return testInstall{
		env: []string{
			"SERVICE_MANAGER=none",
			"DESTDIR=" + destdir,
			"PREFIX=/usr/local",
			"METACONTROLLER_BIN=" + engine,
			"METACONTROLLER_CRDS=" + crds,
			"HOOK_ADDRESS=" + hookAddr,
			"METACONTROLLER_METRICS_ADDRESS=" + metricsAddr,
			"METACONTROLLER_HEALTH_ADDRESS=" + healthAddr,
		},
		destdir:  destdir,
		run:      filepath.Join(destdir, "run", "teamspace"),
		real:     real,
		hookAddr: hookAddr,
	}
}

// TestInstallUninstall runs install.sh twice (idempotent) and uninstall.sh
// with SERVICE_MANAGER=none into a temporary DESTDIR against the live
// cluster, and checks what they leave behind. With METACONTROLLER_BIN the
// installed engine must also turn a TeamSpace into its namespace.
func TestInstallUninstall(t *testing.T) {
	needCluster(t)
	crds := metacontrollerCRDs(t)
	skipIfInstalled(t)
	in := newInstall(t, crds)
	env, destdir, run, real, hookAddr := in.env, in.destdir, in.run, in.real, in.hookAddr
	const ts = "deploy-test-keep"
	t.Cleanup(func() {
		// Whatever happened: stop our processes, remove our objects.
		deployScript(t, env, "uninstall.sh")
		removeTeamSpace(t, ts)
		// The policies stay with the CRD (uninstall.sh); not in this cluster.
		removeAdmissionPolicies(t)
	})

	// A team-* namespace made by hand before the install: install.sh names
	// it before it changes anything.
	const squat = "team-deploy-test-squat"
	kubectl(t, "create", "namespace", squat)
	t.Cleanup(func() { kubectl(t, "delete", "namespace", squat, "--ignore-not-found", "--wait=false") })

	var firstPIDs []int
	for round := 1; round <= 2; round++ {
		r := deployScript(t, env, "install.sh")
		if r.err != nil {
			t.Fatalf("install.sh (round %d): %v", round, r)
		}
		if warn := "team-* namespaces that no TeamSpace owns"; !strings.Contains(r.stderr, warn) || !strings.Contains(r.stderr, squat) {
			t.Errorf("install.sh (round %d) does not name %s under %q:\n%s", round, squat, warn, r.stderr)
		}
		var pids []int
		for _, u := range []string{"teamspace-hook", "metacontroller"} {
			pid := pidOf(t, filepath.Join(run, u+".pid"))
			if !alive(pid) {
				t.Fatalf("%s (pid %d) not running after install.sh; log:\n%s", u, pid, readLog(destdir, u))
			}
			pids = append(pids, pid)
		}
		if round == 1 {
			firstPIDs = pids
			// The platform team sets its limits; the upgrade must keep them.
			kubectlOK(t, "-n", "teamspace-system", "patch", "configmap", "teamspace-limits", "--type=merge", "-p", `{"data":{"maxPods":"33"}}`)
		} else {
			if !strings.Contains(r.stderr, "ConfigMap teamspace-system/teamspace-limits exists, kept as it is") {
				t.Errorf("install.sh again does not say it kept the limits:\n%s", r.stderr)
			}
			for i, pid := range firstPIDs {
				if alive(pid) {
					t.Errorf("install.sh again left the old process %d running beside %d", pid, pids[i])
				}
			}
		}
	}

	checks := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"binaries and units installed under DESTDIR", func(t *testing.T) {
			for _, f := range []string{"usr/local/bin/teamspace-hook", "usr/local/bin/metacontroller", "etc/systemd/system/teamspace-hook.service", "etc/systemd/system/metacontroller.service"} {
				if _, err := os.Stat(filepath.Join(destdir, f)); err != nil {
					t.Error(err)
				}
			}
			unit, _ := os.ReadFile(filepath.Join(destdir, "etc/systemd/system/teamspace-hook.service"))
			if !strings.Contains(string(unit), "ExecStart="+destdir+"/usr/local/bin/teamspace-hook --listen-address="+hookAddr) {
				t.Errorf("installed hook unit does not point into DESTDIR with the chosen address:\n%s", unit)
			}
		}},
		{"hook answers on its address", func(t *testing.T) {
			if err := httpOK("http://" + hookAddr + "/healthz"); err != nil {
				t.Error(err)
			}
		}},
		{"archive directory exists", func(t *testing.T) {
			if fi, err := os.Stat(filepath.Join(destdir, "var/lib/teamspace/archive")); err != nil || !fi.IsDir() {
				t.Errorf("archive dir: %v", err)
			}
		}},
		{"engine credential is root-only and the ServiceAccount's", func(t *testing.T) {
			kc := filepath.Join(destdir, "etc/teamspace/metacontroller.kubeconfig")
			fi, err := os.Stat(kc)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s mode %v, want 0600", kc, fi.Mode().Perm())
			}
			who := kubectlOK(t, "--kubeconfig="+kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
			if who != "system:serviceaccount:teamspace-system:metacontroller" {
				t.Errorf("engine credential is %q, want the ServiceAccount", who)
			}
			// The engine was handed a copy (LoadCredential= emulation).
			if _, err := os.Stat(filepath.Join(run, "credentials", "metacontroller", "kubeconfig")); err != nil {
				t.Error(err)
			}
		}},
		{"CRDs, RBAC and CompositeController in place", func(t *testing.T) {
			for _, obj := range [][]string{
				{"crd", "teamspaces.platform.labhub.io"},
				{"crd", "compositecontrollers.metacontroller.k8s.io"},
				{"clusterrole", "teamspace-metacontroller"},
				{"clusterrolebinding", "teamspace-metacontroller"},
				{"-n", "teamspace-system", "serviceaccount", "metacontroller"},
				{"compositecontrollers.metacontroller.k8s.io", "teamspace"},
				{"validatingadmissionpolicy", "teamspace-limits"},
				{"validatingadmissionpolicybinding", "requires-configmap.teamspace-system.teamspace-limits"},
				{"validatingadmissionpolicybinding", "teamspace-limits-updates"},
				{"validatingadmissionpolicy", "teamspace-guardrails"},
				{"mutatingadmissionpolicy", "teamspace-requested-by"},
				{"validatingadmissionpolicy", "teamspace-namespaces"},
			} {
				if !exists(t, obj...) {
					t.Errorf("%v missing after install", obj)
				}
			}
			// The whole platform, as the in-cluster install renders it
			// (TestInstallPathsAgree): every object is there.
			for _, o := range decodeManifests(t, []byte(platformAs(t, discovery136).stdout)) {
				kind := str(o, "kind") + "." + strings.Split(str(o, "apiVersion"), "/")[0]
				if !exists(t, kind, str(o, "metadata", "name")) {
					t.Errorf("%s %s of hack/deploy/kustomization.yaml missing after install.sh", kind, str(o, "metadata", "name"))
				}
			}
			if got := kubectlOK(t, "-n", "teamspace-system", "get", "configmap", "teamspace-limits", "-o", "jsonpath={.data.maxPods}"); got != "33" {
				t.Errorf("the platform's maxPods after install.sh again: %q, want its own 33 kept", got)
			}
			url := kubectlOK(t, "get", "compositecontrollers.metacontroller.k8s.io", "teamspace", "-o", "jsonpath={.spec.hooks.sync.webhook.url}")
			if url != "http://"+hookAddr+"/sync" {
				t.Errorf("CompositeController sync URL %q, want the installed hook's http://%s/sync", url, hookAddr)
			}
		}},
	}
	for _, c := range checks {
		t.Run(c.name, c.check)
	}

	// A TeamSpace that uninstall must leave alone.
	kubectlIn(t, []byte(`{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"`+ts+`"},"spec":{"pods":2}}`), "apply", "-f", "-")
	if !exists(t, "teamspaces.platform.labhub.io", ts) {
		t.Fatal("could not create a TeamSpace")
	}
	if real {
		waitFor(t, 90*time.Second, "the installed engine to create namespace team-"+ts, func() error {
			if !exists(t, "namespace", "team-"+ts) {
				return fmt.Errorf("no namespace yet; engine log:\n%s", readLog(destdir, "metacontroller"))
			}
			return nil
		})
	}

	hookPID, enginePID := pidOf(t, filepath.Join(run, "teamspace-hook.pid")), pidOf(t, filepath.Join(run, "metacontroller.pid"))
	if r := deployScript(t, env, "uninstall.sh"); r.err != nil {
		t.Fatalf("uninstall.sh: %v", r)
	}
	after := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"processes stopped", func(t *testing.T) {
			for _, pid := range []int{hookPID, enginePID} {
				waitFor(t, 5*time.Second, fmt.Sprintf("pid %d to exit", pid), func() error {
					if alive(pid) {
						return fmt.Errorf("still running")
					}
					return nil
				})
			}
		}},
		{"limits kept while the CRD stays", func(t *testing.T) {
			for _, obj := range [][]string{
				{"validatingadmissionpolicy", "teamspace-limits"},
				{"validatingadmissionpolicybinding", "requires-configmap.teamspace-system.teamspace-limits"},
				{"-n", "teamspace-system", "configmap", "teamspace-limits"},
			} {
				if !exists(t, obj...) {
					t.Errorf("%v removed by uninstall.sh while TeamSpaces can still be requested", obj)
				}
			}
		}},
		{"TeamSpace CRD and TeamSpace kept", func(t *testing.T) {
			if !exists(t, "crd", "teamspaces.platform.labhub.io") {
				t.Error("uninstall deleted the TeamSpace CRD")
			}
			if !exists(t, "teamspaces.platform.labhub.io", ts) {
				t.Error("uninstall deleted a TeamSpace")
			}
			if real && !exists(t, "namespace", "team-"+ts) {
				t.Error("uninstall deleted a team namespace")
			}
		}},
		{"CompositeController and RBAC removed", func(t *testing.T) {
			for _, obj := range [][]string{
				{"compositecontrollers.metacontroller.k8s.io", "teamspace"},
				{"clusterrole", "teamspace-metacontroller"},
				{"clusterrolebinding", "teamspace-metacontroller"},
			} {
				if exists(t, obj...) {
					t.Errorf("%v left behind by uninstall", obj)
				}
			}
		}},
		{"host files removed, archive kept", func(t *testing.T) {
			for _, f := range []string{"usr/local/bin/teamspace-hook", "usr/local/bin/metacontroller", "etc/systemd/system/metacontroller.service", "etc/teamspace/metacontroller.kubeconfig", "run/teamspace/metacontroller.pid"} {
				if _, err := os.Stat(filepath.Join(destdir, f)); err == nil {
					t.Errorf("%s left behind", f)
				}
			}
			if _, err := os.Stat(filepath.Join(destdir, "var/lib/teamspace/archive")); err != nil {
				t.Errorf("archive removed: %v", err)
			}
		}},
	}
	for _, c := range after {
		t.Run(c.name, c.check)
	}
}

func readLog(destdir, unit string) string {
	b, _ := os.ReadFile(filepath.Join(destdir, "var", "log", "teamspace", unit+".log"))
	s := string(b)
	if len(s) > 4000 {
		s = "...\n" + s[len(s)-4000:]
	}
	return s
}
