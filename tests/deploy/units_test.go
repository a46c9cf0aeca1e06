package deploy

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// verifyUnit runs `systemd-analyze verify` on unit text saved as name in a
// temporary directory. systemd-analyze exits 0 on many problems (unknown
// keys, unparsable values are "ignoring" warnings), so any diagnostic that
// names the unit counts as a failure too.
func verifyUnit(t *testing.T, name, text string) error {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, "", []string{"SYSTEMD_LOG_COLOR=0"}, nil, "systemd-analyze", "verify", "--man=no", path)
	var diags []string
	for _, line := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.Contains(line, name) {
			diags = append(diags, line)
		}
	}
	if r.err != nil || len(diags) > 0 {
		return fmt.Errorf("systemd-analyze verify %s: %v\n%s%s", name, r.err, r.stdout, r.stderr)
	}
	return nil
}

func needSystemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("systemd-analyze not found (Debian: apt-get install systemd); required in CI")
		}
		t.Skip("systemd-analyze not found")
	}
}

// unitText reads hack/deploy/systemd/name with ExecStart='s binary
// replaced by one that exists here (systemd-analyze checks it is
// executable).
func unitText(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "deploy", "systemd", name))
	if err != nil {
		t.Fatal(err)
	}
	hook := hookBinary(t)
	engine := testenv.Engine(t, "tests/deploy: systemd-analyze verify checks the engine unit with the hook binary in the engine's place")
	if engine == "" {
		engine = hook // any executable will do for verify
	}
	s := strings.ReplaceAll(string(b), "/usr/local/bin/teamspace-hook", hook)
	return strings.ReplaceAll(s, "/usr/local/bin/metacontroller", engine)
}

// TestUnitsVerify: the unit files pass systemd-analyze verify, and the
// check itself rejects broken units.
func TestUnitsVerify(t *testing.T) {
	offline(t)
	needSystemdAnalyze(t)
	tests := []struct {
		name    string
		unit    string
		mutate  func(string) string
		wantErr bool
	}{
		{name: "hook unit is valid", unit: "teamspace-hook.service"},
		{name: "engine unit is valid", unit: "metacontroller.service"},
		{
			name: "check catches an unknown key", unit: "teamspace-hook.service", wantErr: true,
			mutate: func(s string) string {
				return strings.Replace(s, "[Service]\n", "[Service]\nProtectEverything=yes\n", 1)
			},
		},
		{
			name: "check catches a bad value", unit: "metacontroller.service", wantErr: true,
			mutate: func(s string) string { return strings.Replace(s, "Restart=always", "Restart=sometimes", 1) },
		},
		{
			name: "check catches a missing binary", unit: "teamspace-hook.service", wantErr: true,
			mutate: func(s string) string { return strings.Replace(s, "ExecStart=/", "ExecStart=/nonexistent/", 1) },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := unitText(t, tc.unit)
			if tc.mutate != nil {
				mutated := tc.mutate(text)
				if mutated == text {
					t.Fatal("mutation did not apply: the unit changed, update the test")
				}
				text = mutated
			}
			err := verifyUnit(t, tc.unit, text)
			if tc.wantErr && err == nil {
				t.Fatal("systemd-analyze verify accepted a broken unit")
			}
			if !tc.wantErr && err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestUnitsSettings: the directives the deployment relies on are there.
func TestUnitsSettings(t *testing.T) {
	offline(t)
	hardening := map[string]string{
		"NoNewPrivileges":         "yes",
		"ProtectSystem":           "strict",
		"ProtectHome":             "yes",
		"PrivateTmp":              "yes",
		"PrivateDevices":          "yes",
		"ProtectKernelTunables":   "yes",
		"ProtectKernelModules":    "yes",
		"ProtectControlGroups":    "yes",
		"RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX",
		"CapabilityBoundingSet":   "",
		"SystemCallFilter":        "@system-service",
		"Restart":                 "always",
		"KillSignal":              "SIGTERM",
	}
	tests := []struct {
		unit        string
		want        map[string]string // Service key -> a value it must have
		argsWant    []string          // ExecStart words
		argsAvoid   []string          // substrings no ExecStart word may contain
		envContain  []string          // substrings of Environment= lines
		argsFromEnv string            // an Environment= variable whose words ExecStart must pass
	}{
		{
			unit: "teamspace-hook.service",
			want: map[string]string{
				"User":           "teamspace",
				"StateDirectory": "teamspace/archive",
				"ReadWritePaths": "/var/lib/teamspace/archive",
				"IPAddressAllow": "localhost",
			},
			argsWant: []string{"/usr/local/bin/teamspace-hook", "--listen-address=127.0.0.1:8080", "--archive-dir=/var/lib/teamspace/archive"},
		},
		{
			unit: "metacontroller.service",
			want: map[string]string{
				"DynamicUser":    "yes",
				"LoadCredential": "kubeconfig:/etc/teamspace/metacontroller.kubeconfig",
			},
			argsWant: []string{
				"/usr/local/bin/metacontroller", "--kubeconfig=%d/kubeconfig",
				"--metrics-address=127.0.0.1:9999", "--health-probe-bind-address=127.0.0.1:8081",
				"--discovery-interval=5s", "--leader-election=false",
			},
			// The tuning flags are set in the unit only (hack/up.sh and
			// the benchmarks read them from it): whatever they are, the
			// command line passes them.
			argsFromEnv: "METACONTROLLER_TUNING",
			// Never k3s's admin credential.
			argsAvoid: []string{"k3s.yaml", "rancher"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.unit, func(t *testing.T) {
			entries := parseUnit(t, filepath.Join(repoRoot(t), "hack", "deploy", "systemd", tc.unit))
			want := map[string]string{}
			for k, v := range hardening {
				want[k] = v
			}
			for k, v := range tc.want {
				want[k] = v
			}
			for k, v := range want {
				if got := values(entries, "Service", k); !slices.Contains(got, v) {
					t.Errorf("[Service] %s=%q missing (have %q)", k, v, got)
				}
			}
			if got := values(entries, "Install", "WantedBy"); !slices.Contains(got, "multi-user.target") {
				t.Errorf("[Install] WantedBy=multi-user.target missing (have %q)", got)
			}
			args := execStart(t, entries, nil)
			for _, w := range tc.argsWant {
				if !slices.Contains(args, w) {
					t.Errorf("ExecStart lacks %q: %q", w, args)
				}
			}
			for _, a := range args {
				for _, bad := range tc.argsAvoid {
					if strings.Contains(a, bad) {
						t.Errorf("ExecStart word %q contains %q", a, bad)
					}
				}
			}
			env := strings.Join(values(entries, "Service", "Environment"), "\n")
			if tc.argsFromEnv != "" {
				var words []string
				for _, line := range values(entries, "Service", "Environment") {
					if v, ok := strings.CutPrefix(strings.Trim(line, `"`), tc.argsFromEnv+"="); ok {
						words = strings.Fields(v)
					}
				}
				if len(words) == 0 {
					t.Errorf("Environment=%s is missing or empty", tc.argsFromEnv)
				}
				for _, w := range words {
					if !slices.Contains(args, w) {
						t.Errorf("ExecStart lacks %q of %s: %q", w, tc.argsFromEnv, args)
					}
				}
			}
			for _, w := range tc.envContain {
				if !strings.Contains(env, w) {
					t.Errorf("Environment= lacks %q:\n%s", w, env)
				}
			}
		})
	}
}

// TestHookUnitCommandLine: the hook accepts the unit's command line (with a
// free port and a temporary archive), serves /healthz and exits 0 on the
// unit's KillSignal, SIGTERM.
func TestHookUnitCommandLine(t *testing.T) {
	offline(t)
	entries := parseUnit(t, filepath.Join(repoRoot(t), "hack", "deploy", "systemd", "teamspace-hook.service"))
	addr := freePort(t)
	archive := filepath.Join(t.TempDir(), "archive")
	args := execStart(t, entries, nil)
	for i, a := range args {
		switch {
		case i == 0:
			args[i] = hookBinary(t)
		case strings.HasPrefix(a, "--listen-address="):
			args[i] = "--listen-address=" + addr
		case strings.HasPrefix(a, "--archive-dir="):
			args[i] = "--archive-dir=" + archive
		}
	}
	cmd := exec.Command(args[0], args[1:]...)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	defer func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
		}
	}()
	waitFor(t, 20*time.Second, "the hook's /healthz", func() error {
		select {
		case err := <-done:
			t.Fatalf("the hook exited with the unit's flags: %v\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get("http://" + addr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	})
	if fi, err := os.Stat(archive); err != nil || !fi.IsDir() {
		t.Errorf("--archive-dir %s not created: %v", archive, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("after SIGTERM the hook exited with %v, want 0\n%s", err, logs.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the hook did not stop within TimeoutStopSec (30 s) of SIGTERM\n%s", logs.String())
	}
}

// TestEngineUnitFlags: Metacontroller knows every flag of the unit's command
// line (Go's flag package stops at the first unknown one; -help after them
// exits 0 only if all were accepted). Needs METACONTROLLER_BIN.
func TestEngineUnitFlags(t *testing.T) {
	offline(t)
	bin := testenv.NeedEngine(t, "tests/deploy: TestEngineUnitFlags (the engine knows every flag of its unit)")
	entries := parseUnit(t, filepath.Join(repoRoot(t), "hack", "deploy", "systemd", "metacontroller.service"))
	args := execStart(t, entries, map[string]string{"%d": t.TempDir()})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := runCmd(ctx, "", nil, nil, bin, append(args[1:], "-help")...)
	if r.err != nil || strings.Contains(r.stderr, "flag provided but not defined") {
		t.Fatalf("metacontroller rejects the unit's flags %q: %v", args[1:], r)
	}
}

// TestUnitsExposure: `systemd-analyze security` rates both sandboxes at
// most 2.0 ("OK"; today 1.4 and 1.5): removing hardening fails here.
func TestUnitsExposure(t *testing.T) {
	offline(t)
	needSystemdAnalyze(t)
	tests := []struct {
		name      string
		unit      string
		mutate    func(string) string
		threshold string // 10 x the exposure score
		wantErr   bool
	}{
		{name: "hook unit", unit: "teamspace-hook.service", threshold: "20"},
		{name: "engine unit", unit: "metacontroller.service", threshold: "20"},
		{
			name: "check catches lost hardening", unit: "teamspace-hook.service", threshold: "20", wantErr: true,
			mutate: func(s string) string {
				for _, k := range []string{"ProtectSystem=strict", "SystemCallFilter=@system-service", "CapabilityBoundingSet=\n", "PrivateDevices=yes", "RestrictNamespaces=yes"} {
					s = strings.Replace(s, k, "", 1)
				}
				return s
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := unitText(t, tc.unit)
			if tc.mutate != nil {
				text = tc.mutate(text)
			}
			path := filepath.Join(t.TempDir(), tc.unit)
			if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := runCmd(ctx, "", []string{"SYSTEMD_LOG_COLOR=0", "SYSTEMD_COLORS=0"}, nil, "systemd-analyze", "security", "--offline=true", "--no-pager", "--threshold="+tc.threshold, path)
			if tc.wantErr && r.err == nil {
				t.Fatalf("exposure check passed a weakened unit:\n%s", r.stdout)
			}
			if !tc.wantErr && r.err != nil {
				t.Fatalf("exposure above %s/10: %v", tc.threshold, r)
			}
		})
	}
}
