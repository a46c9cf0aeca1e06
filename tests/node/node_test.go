// Package node boots hack/node.sh's systemd-nspawn machine (systemd as PID
// 1, a k3s.service stand-in) and runs the README's install commands in it,
// checking the installed services from inside. Heavy (needs root and
// systemd-nspawn): it runs only with TEAMSPACE_NODE_TEST=1, which
// hack/test.sh sets. Without METACONTROLLER_BIN the engine unit runs a stub
// (serves /healthz, reads its credential) and the engine parts skip.
package node

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// hostState is what the node must not change on the host: device nodes
// (mode, owner, numbers), the mount table and the cgroup tree.
func hostState(t *testing.T) map[string]string {
	t.Helper()
	s := map[string]string{}
	entries, err := os.ReadDir("/dev")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		p := "/dev/" + e.Name()
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil || st.Mode&(syscall.S_IFCHR|syscall.S_IFBLK) == 0 {
			continue
		}
		s["dev "+p] = fmt.Sprintf("mode=%o uid=%d gid=%d rdev=%d", st.Mode, st.Uid, st.Gid, st.Rdev)
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSpace(string(mi)), "\n") {
		f := strings.Fields(l)
		s["mount "+f[4]] = strings.Join(f[2:], " ")
	}
	filepath.WalkDir("/sys/fs/cgroup", func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		// The sandbox this machine runs our commands in makes a memory
		// cgroup per command under process_api: not ours to compare.
		if strings.Contains(p, "/process_api/") {
			return filepath.SkipDir
		}
		s["cgroup "+p] = ""
		return nil
	})
	return s
}

func diffState(before, after map[string]string) []string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "gone: "+k)
		} else if w != v {
			d = append(d, fmt.Sprintf("changed: %s: %s -> %s", k, v, w))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "new: "+k)
		}
	}
	sort.Strings(d)
	return d
}

type machine struct {
	t     *testing.T
	env   []string
	state string
}

func (m *machine) run(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(testenv.RepoRoot(), "hack", "node.sh"), args...)
	cmd.Env = append(os.Environ(), m.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	return out.String(), err
}

// sh runs a shell command as root inside the node and fails the test on error.
func (m *machine) sh(script string) string {
	m.t.Helper()
	out, err := m.run(10*time.Minute, "exec", "bash", "-c", script)
	if err != nil {
		m.t.Fatalf("in the node: %s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(out)
}

// waitIn polls a shell condition inside the node.
func (m *machine) waitIn(timeout time.Duration, what, cond string) time.Duration {
	m.t.Helper()
	out := m.sh(fmt.Sprintf(`s=$(date +%%s%%N); for i in $(seq %d); do if %s; then echo $(( ($(date +%%s%%N) - s) / 1000000 )); exit 0; fi; sleep 0.05; done; echo timeout; exit 1`, int(timeout/(50*time.Millisecond)), cond))
	ms, err := strconv.Atoi(out)
	if err != nil {
		m.t.Fatalf("waiting for %s: %s", what, out)
	}
	return time.Duration(ms) * time.Millisecond
}

const installCmd = "METACONTROLLER_BIN=/opt/metacontroller/metacontroller METACONTROLLER_CRDS=/root/metacontroller-crds-v1.yaml hack/deploy/install.sh"

func TestNode(t *testing.T) {
	if os.Getenv("TEAMSPACE_NODE_TEST") != "1" {
		t.Skip("TEAMSPACE_NODE_TEST=1 not set: the systemd-nspawn node test needs root (hack/test.sh runs it)")
	}
	if os.Getuid() != 0 {
		t.Fatal("TEAMSPACE_NODE_TEST=1 but not root: systemd-nspawn needs root")
	}
	engine, real := testenv.Engine(t, "tests/node: the engine unit runs a stub (health endpoint only); the TeamSpace lifecycle, the archive record and the reboot catch-up are skipped"), true
	if engine == "" {
		engine, real = testenv.StubEngine(t), false
	}
	before := hostState(t)
	m := &machine{t: t, state: filepath.Join(t.TempDir(), "node")}
	m.env = []string{"TEAMSPACE_NODE_STATE=" + m.state, "METACONTROLLER_BIN=" + engine}
	t.Cleanup(func() {
		if out, err := m.run(5*time.Minute, "down"); err != nil {
			t.Errorf("node.sh down: %v\n%s", err, out)
		}
		if d := diffState(before, hostState(t)); len(d) > 0 {
			t.Errorf("the node changed the host:\n%s", strings.Join(d, "\n"))
		}
	})

	start := time.Now()
	if out, err := m.run(20*time.Minute, "up"); err != nil {
		t.Fatalf("node.sh up: %v\n%s", err, out)
	}
	t.Logf("node up (root extracted, booted, k3s.service active) in %s", time.Since(start).Round(100*time.Millisecond))
	if got := m.sh("systemctl show -p Description --value k3s.service"); !strings.Contains(got, "Stand-in for k3s") {
		t.Errorf("k3s.service does not say it is a stand-in: %q", got)
	}
	if got := m.sh("ps -o comm= -p 1"); got != "systemd" {
		t.Errorf("PID 1 in the node is %q, want systemd", got)
	}

	start = time.Now()
	m.sh(installCmd)
	t.Logf("install.sh (cold hook build inside the node) took %s", time.Since(start).Round(100*time.Millisecond))

	t.Run("services active under their sandbox", func(t *testing.T) {
		m := *m
		m.t = t
		for _, u := range []string{"teamspace-hook", "metacontroller"} {
			if got := m.sh("systemctl is-active " + u + " ; systemctl is-enabled " + u); got != "active\nenabled" {
				t.Errorf("%s: %q, want active and enabled", u, got)
			}
		}
		if got := m.sh("ps -o user= -p $(systemctl show -p MainPID --value teamspace-hook)"); got != "teamspace" {
			t.Errorf("hook runs as %q, want teamspace", got)
		}
		if got := m.sh("stat -c '%U:%G %a' /var/lib/teamspace/archive"); got != "teamspace:teamspace 750" {
			t.Errorf("archive dir %q, want teamspace:teamspace 750", got)
		}
		if got := m.sh("curl -fsS http://127.0.0.1:8080/healthz"); got != "ok" {
			t.Errorf("hook /healthz %q", got)
		}
		for _, u := range []string{"teamspace-hook", "metacontroller"} {
			out := m.sh("systemd-analyze security --no-pager " + u + ".service | sed -n 's/.*Overall exposure level for .*: \\([0-9.]*\\).*/\\1/p'")
			score, err := strconv.ParseFloat(out, 64)
			if err != nil || score > 2.0 {
				t.Errorf("%s exposure %q, want <= 2.0", u, out)
			}
			t.Logf("%s: systemd-analyze security exposure %.1f", u, score)
		}
	})

	t.Run("kill -9 is followed by a restart", func(t *testing.T) {
		m := *m
		m.t = t
		for _, c := range []struct{ unit, health string }{{"teamspace-hook", "http://127.0.0.1:8080/healthz"}, {"metacontroller", "http://127.0.0.1:8081/healthz"}} {
			old := m.sh("systemctl show -p MainPID --value " + c.unit)
			m.sh("systemctl kill -s KILL " + c.unit)
			d := m.waitIn(60*time.Second, c.unit+" back", fmt.Sprintf(`p=$(systemctl show -p MainPID --value %s); [ "$p" != %s ] && [ "$p" != 0 ] && curl -fs -o /dev/null %s`, c.unit, old, c.health))
			t.Logf("%s back and healthy %s after systemctl kill -s KILL", c.unit, d)
		}
	})

	const fingerprint = `sha256sum /usr/local/bin/teamspace-hook /usr/local/bin/metacontroller /etc/systemd/system/teamspace-hook.service /etc/systemd/system/metacontroller.service /etc/teamspace/metacontroller.kubeconfig; kubectl get crd teamspaces.platform.labhub.io clusterrole/teamspace-metacontroller clusterrolebinding/teamspace-metacontroller compositecontrollers.metacontroller.k8s.io/teamspace -o jsonpath='{range .items[*]}{.metadata.name}={.metadata.resourceVersion}{"\n"}{end}'; kubectl -n teamspace-system get secret metacontroller-token -o jsonpath='{.metadata.resourceVersion}'`
	t.Run("a second install.sh changes nothing", func(t *testing.T) {
		m := *m
		m.t = t
		first := m.sh(fingerprint)
		m.sh(installCmd)
		if second := m.sh(fingerprint); second != first {
			t.Errorf("second install.sh changed files or objects:\nbefore:\n%s\nafter:\n%s", first, second)
		}
	})

	m.sh(`echo '{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"keep"},"spec":{"pods":2}}' | kubectl apply -f -`)
	if real {
		m.waitIn(90*time.Second, "team-keep's quota", `[ "$(kubectl -n team-keep get resourcequota team-quota -o jsonpath='{.spec.hard.pods}' 2>/dev/null)" = 2 ]`)
		m.sh(`echo '{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"gone"},"spec":{"pods":1}}' | kubectl apply -f - && kubectl wait --for=condition=Ready teamspace/gone --timeout=90s >/dev/null && kubectl delete teamspace gone --timeout=90s >/dev/null`)
		// The hook creates records 0600 (hook/archive), whatever UMask= says.
		if got := m.sh("stat -c '%U %a' /var/lib/teamspace/archive/gone.json"); !strings.HasPrefix(got, "teamspace ") {
			t.Errorf("archive record gone.json: %q, want owned by teamspace", got)
		} else {
			t.Logf("archive record gone.json: owner and mode %s", got)
		}
		t.Run("the walkthrough inside the node", func(t *testing.T) {
			m := *m
			m.t = t
			m.walkthrough()
		})
		// Changed while the engine (then the whole node) is down.
		m.sh(`systemctl stop metacontroller && kubectl patch teamspace keep --type=merge -p '{"spec":{"pods":3}}' >/dev/null`)
		if out, err := m.run(5*time.Minute, "stop"); err != nil {
			t.Fatalf("node.sh stop: %v\n%s", err, out)
		}
		start := time.Now()
		if out, err := m.run(10*time.Minute, "up"); err != nil {
			t.Fatalf("node.sh up again: %v\n%s", err, out)
		}
		m.waitIn(60*time.Second, "hook after reboot", "curl -fs -o /dev/null http://127.0.0.1:8080/healthz")
		t.Logf("reboot: node up to hook ready in %s", time.Since(start).Round(100*time.Millisecond))
		for _, u := range []string{"teamspace-hook", "metacontroller"} {
			if got := m.sh("systemctl is-enabled " + u); got != "enabled" {
				t.Errorf("%s after reboot: %q", u, got)
			}
		}
		d := m.waitIn(120*time.Second, "team-keep's quota caught up", `[ "$(kubectl -n team-keep get resourcequota team-quota -o jsonpath='{.spec.hard.pods}' 2>/dev/null)" = 3 ]`)
		t.Logf("change made while down caught up %s after the hook was ready", d)
		if got := m.sh("grep -c gone /var/lib/teamspace/archive/gone.json"); got == "0" {
			t.Errorf("archive after reboot: %q", got)
		}
	} else {
		t.Log("engine parts skipped (no METACONTROLLER_BIN): TeamSpace lifecycle, archive record, reboot catch-up")
	}

	t.Run("uninstall.sh keeps TeamSpaces, namespaces and the archive", func(t *testing.T) {
		m := *m
		m.t = t
		m.sh("hack/deploy/uninstall.sh")
		for _, u := range []string{"teamspace-hook", "metacontroller"} {
			if got, _ := m.run(time.Minute, "exec", "systemctl", "is-active", u); strings.TrimSpace(got) == "active" {
				t.Errorf("%s still active after uninstall", u)
			}
		}
		m.sh("kubectl get teamspace keep -o name")
		if real {
			m.sh("kubectl get namespace team-keep -o name && test -s /var/lib/teamspace/archive/gone.json")
		}
		m.sh("test -d /var/lib/teamspace/archive")
		if got := m.sh("hack/deploy/uninstall.sh 2>&1"); !strings.Contains(got, "nothing to uninstall") {
			t.Errorf("second uninstall.sh: %q, want 'nothing to uninstall'", got)
		}
	})
}

// walkthrough runs tests/e2e's TestWalkthrough inside the node against the
// installed services, as a user on k3s would: the test binary is built on
// the host (static, the node has Go but a cold build cache) into the node's
// root, pointed at the node's checkout, its kubeconfig, the hook's port and
// the archive, and it stops and starts the engine with systemctl.
func (m *machine) walkthrough() {
	m.t.Helper()
	bin := filepath.Join(m.state, "root", "root", "e2e.test")
	build := exec.Command("go", "test", "-c", "-o", bin, "./tests/e2e")
	build.Dir = testenv.RepoRoot()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		m.t.Fatalf("building the walkthrough: %v\n%s", err, out)
	}
	start := time.Now()
	out := m.sh(`TEAMSPACE_REPO=/root/teamspace WALKTHROUGH_CLUSTER=current WALKTHROUGH_OUT=/root/walkthrough ` +
		`KUBECONFIG=/etc/rancher/k3s/k3s.yaml TEAMSPACE_HOOK_URL=http://127.0.0.1:8080 TEAMSPACE_COMPOSITECONTROLLER=/etc/teamspace/compositecontroller.yaml TEAMSPACE_ARCHIVE_DIR=/var/lib/teamspace/archive ` +
		`ENGINE_STOP='systemctl stop metacontroller' ENGINE_START='systemctl start metacontroller' ` +
		`/root/e2e.test -test.run '^TestWalkthrough$' -test.v -test.timeout 30m 2>&1 | tail -n 40; exit "${PIPESTATUS[0]}"`)
	m.t.Logf("walkthrough inside the node passed in %s:\n%s", time.Since(start).Round(100*time.Millisecond), out)
}
