package deploy

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// installedFiles lists what install.sh leaves under destdir that a failed
// install must not: binaries, units, the engine credential.
func installedFiles(destdir string) []string {
	var found []string
	for _, f := range []string{"usr/local/bin/teamspace-hook", "usr/local/bin/metacontroller", "etc/systemd/system/teamspace-hook.service", "etc/systemd/system/metacontroller.service", "etc/teamspace/metacontroller.kubeconfig"} {
		if _, err := os.Stat(filepath.Join(destdir, f)); err == nil {
			found = append(found, f)
		}
	}
	return found
}

// TestInstallBadInput gives install.sh each bad input of the issue: it must
// fail with one line naming the cause before changing anything, and a
// re-run with the input fixed must complete.
func TestInstallBadInput(t *testing.T) {
	needCluster(t)
	crds := metacontrollerCRDs(t)
	skipIfInstalled(t)
	engine, _ := engineBinary(t)
	hook := hookBinary(t)
	unreachable := filepath.Join(t.TempDir(), "unreachable.kubeconfig")
	if err := os.WriteFile(unreachable, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://"+freePort(t)+"', insecure-skip-tls-verify: true}\nusers:\n- name: u\n  user: {token: x}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		// bad returns the bad settings and undoes anything it set up.
		bad  func(t *testing.T, hookAddr string) (env []string, undo func())
		want string
	}{
		{"no kubeconfig", func(t *testing.T, _ string) ([]string, func()) {
			return []string{"KUBECONFIG=/nonexistent/k3s.yaml"}, func() {}
		}, "KUBECONFIG=/nonexistent/k3s.yaml: no such readable file"},
		{"unreachable API server", func(t *testing.T, _ string) ([]string, func()) {
			return []string{"KUBECONFIG=" + unreachable}, func() {}
		}, "cannot reach the API server https://127.0.0.1:"},
		{"hook port in use", func(t *testing.T, hookAddr string) ([]string, func()) {
			l, err := net.Listen("tcp", hookAddr)
			if err != nil {
				t.Fatal(err)
			}
			return nil, func() { l.Close() }
		}, "(HOOK_ADDRESS, for teamspace-hook) is already in use by another process"},
		{"missing Metacontroller binary", func(t *testing.T, _ string) ([]string, func()) {
			return []string{"METACONTROLLER_BIN=/nonexistent/metacontroller"}, func() {}
		}, "METACONTROLLER_BIN=/nonexistent/metacontroller is not an executable file"},
		{"Metacontroller with the changes proposed upstream", func(t *testing.T, _ string) ([]string, func()) {
			// logs its version as Metacontroller does, stamped as
			// hack/lib.sh ensure_proposed_engine stamps it
			fake := filepath.Join(t.TempDir(), "metacontroller")
			log := `{"level":"info","msg":"Configuration information","version":"v4.17.2+proposed.0123456789ab"}`
			if err := os.WriteFile(fake, []byte("#!/bin/sh\necho '"+log+"' >&2\nexit 1\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return []string{"METACONTROLLER_BIN=" + fake}, func() {}
		}, "is Metacontroller v4.17.2+proposed.0123456789ab, a build with changes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			destdir := t.TempDir()
			hookAddr := freePort(t)
			env := []string{
				"SERVICE_MANAGER=none", "DESTDIR=" + destdir, "PREFIX=/usr/local",
				"METACONTROLLER_BIN=" + engine, "METACONTROLLER_CRDS=" + crds, "HOOK_BIN=" + hook,
				"HOOK_ADDRESS=" + hookAddr,
				"METACONTROLLER_METRICS_ADDRESS=" + freePort(t),
				"METACONTROLLER_HEALTH_ADDRESS=" + freePort(t),
			}
			t.Cleanup(func() { deployScript(t, env, "uninstall.sh") })
			badEnv, undo := c.bad(t, hookAddr)
			r := deployScript(t, append(append([]string{}, env...), badEnv...), "install.sh")
			undo()
			if r.err == nil {
				t.Fatalf("install.sh succeeded with a bad input")
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "install.sh: error: ") || !strings.Contains(lines[0], c.want) {
				t.Errorf("install.sh said\n%s\nwant one line 'install.sh: error: ...%s...'", r.stderr, c.want)
			}
			if f := installedFiles(destdir); len(f) > 0 {
				t.Errorf("a failed install left %v behind", f)
			}
			if exists(t, "compositecontrollers.metacontroller.k8s.io", "teamspace") {
				t.Error("a failed install applied the CompositeController")
			}
			if r := deployScript(t, env, "install.sh"); r.err != nil {
				t.Fatalf("install.sh after the fix: %v", r)
			}
			if err := httpOK("http://" + hookAddr + "/healthz"); err != nil {
				t.Errorf("after the fix: %v", err)
			}
			if r := deployScript(t, env, "uninstall.sh"); r.err != nil {
				t.Fatalf("uninstall.sh: %v", r)
			}
		})
	}
}

// TestUninstallNothingInstalled: uninstall.sh where install.sh never ran
// says so and exits 0 (no cluster configured at all).
func TestUninstallNothingInstalled(t *testing.T) {
	offline(t)
	if _, err := os.Stat("/etc/rancher/k3s/k3s.yaml"); err == nil {
		t.Skip("/etc/rancher/k3s/k3s.yaml exists: this host has a cluster")
	}
	destdir := t.TempDir()
	r := deployScript(t, []string{"SERVICE_MANAGER=none", "DESTDIR=" + destdir, "KUBECONFIG="}, "uninstall.sh")
	if r.err != nil {
		t.Fatalf("uninstall.sh with nothing installed: %v", r)
	}
	if !strings.Contains(r.stderr, "nothing to uninstall") {
		t.Errorf("uninstall.sh did not say that nothing is installed:\n%s", r.stderr)
	}
}
