// Package e2e runs hack/walkthrough.sh against a real local setup
// (hack/up.sh: etcd, kube-apiserver, kube-controller-manager, the hook and
// Metacontroller as host processes) and checks the evidence it writes.
//
// It needs a Metacontroller binary, which this project does not ship:
//
//	METACONTROLLER_BIN=/path/to/metacontroller go test -timeout 40m ./tests/e2e
//
// Without METACONTROLLER_BIN the test skips and says so. The first run builds
// the Kubernetes binaries (hack/cluster.sh, ~10 minutes on 2 cores); later
// runs take 2-3 minutes. TEAMSPACE_E2E_KEEP=1 keeps the logs, the archive and
// the walkthrough evidence after a passing run; a failing run always keeps
// them and names the directory.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

const engineFinalizer = "metacontroller.io/compositecontroller-teamspace"

// TestMain starts the package's control plane (tests/controlplane) only
// with METACONTROLLER_BIN: every test here needs the engine.
func TestMain(m *testing.M) { os.Exit(controlplane.Main(m, "METACONTROLLER_BIN")) }

func repoRoot(t *testing.T) string { return testenv.RepoRoot() }

// run runs a script of the repository with env added, its output going to
// logPath (a file, so that processes the script leaves running never hold a
// pipe of ours open).
func run(ctx context.Context, t *testing.T, repo, logPath string, env []string, name string, args ...string) error {
	t.Helper()
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "\n==== %s %s\n", time.Now().Format(time.RFC3339), strings.Join(append([]string{name}, args...), " "))
	cmd := exec.CommandContext(ctx, filepath.Join(repo, name), args...)
	cmd.Dir = repo
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = nil
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	err = cmd.Run()
	t.Logf("%s: %v (%s)", strings.Join(append([]string{name}, args...), " "), errOrOK(err), time.Since(start).Round(time.Second))
	return err
}

func errOrOK(err error) string {
	if err != nil {
		return err.Error()
	}
	return "ok"
}

// tail returns the last n lines of a file, for failure messages.
func tail(path string, n int) string { return controlplane.Tail(path, n) }

func readJSON(t *testing.T, dir, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		t.Fatalf("walkthrough evidence: %v", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v\n%s", name, err, b)
	}
	t.Logf("%s: %s", name, strings.Join(strings.Fields(string(b)), " "))
}

type (
	beforeJSON struct {
		UID             string `json:"uid"`
		NamespaceExists *bool  `json:"namespace_exists"`
	}
	generationJSON struct {
		UID           string          `json:"uid"`
		GenInitial    int64           `json:"gen_initial"`
		GenAfterLabel int64           `json:"gen_after_label"`
		GenAfterSpec  int64           `json:"gen_after_spec"`
		StatusViaMain json.RawMessage `json:"status_via_main"`
	}
	reconcileJSON struct {
		QuotaUID            string `json:"quota_uid"`
		NamespaceOwnerUID   string `json:"namespace_owner_uid"`
		SecondPassRVChanged *bool  `json:"second_pass_rv_changed"`
	}
	driftJSON struct {
		DeletedUID               string   `json:"deleted_uid"`
		RestoredUID              string   `json:"restored_uid"`
		RestoreSeconds           *int     `json:"restore_seconds"`
		RestoreSecondsFractional *float64 `json:"restore_seconds_fractional"`
		EditedTo                 int      `json:"edited_to"`
		RevertedTo               int      `json:"reverted_to"`
	}
	cleanupJSON struct {
		UID              string `json:"uid"`
		BlockedSeen      bool   `json:"blocked_seen"`
		NamespaceGone    bool   `json:"namespace_gone"`
		Finalizer        string `json:"finalizer"`
		Archived         bool   `json:"archived"`
		ForeignFinalizer struct {
			Kept bool `json:"kept"`
		} `json:"foreign_finalizer"`
	}
	catchupJSON struct {
		Generation            int64  `json:"generation"`
		ObservedWhileStopped  int64  `json:"observed_while_stopped"`
		QuotaPodsWhileStopped string `json:"quota_pods_while_stopped"`
		ObservedAfterStart    int64  `json:"observed_after_start"`
		QuotaPodsAfterStart   string `json:"quota_pods_after_start"`
	}
	reportJSON struct {
		CRDAloneCreatedNamespace      bool   `json:"crd_alone_created_namespace"`
		StatusBumpsGeneration         bool   `json:"status_bumps_generation"`
		RestoreSeconds                int    `json:"restore_seconds"`
		Finalizer                     string `json:"finalizer"`
		Archived                      bool   `json:"archived"`
		GenerationsBehindWhileStopped int64  `json:"generations_behind_while_stopped"`
		Trigger                       string `json:"trigger"`
	}
)

func TestWalkthrough(t *testing.T) {
	if os.Getenv("METACONTROLLER_BIN") == "" {
		t.Skip("METACONTROLLER_BIN not set: skipped the end-to-end walkthrough, nothing was run. " +
			"It needs a Metacontroller binary (not shipped by this project, see hack/up.sh): " +
			"METACONTROLLER_BIN=/path/to/metacontroller go test -timeout 40m ./tests/e2e")
	}
	repo := repoRoot(t)

	// base/state is the state directory (hack/down.sh removes it), beside it
	// the script output and the walkthrough evidence.
	base, err := os.MkdirTemp("", "teamspace-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(base, "state")
	logPath := filepath.Join(base, "e2e.log")
	out := filepath.Join(base, "walkthrough-out")
	env := []string{"TEAMSPACE_STATE=" + state, "WALKTHROUGH_OUT=" + out}

	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		// Leave time for hack/down.sh after a command that ran out of time.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-90*time.Second))
		defer cancel()
	}

	t.Cleanup(func() {
		keep := t.Failed() || os.Getenv("TEAMSPACE_E2E_KEEP") != ""
		if keep {
			// hack/cluster.sh down removes the state directory: save the logs.
			for _, d := range []string{"logs", "up/logs", "archive"} {
				src := filepath.Join(state, d)
				if _, err := os.Stat(src); err == nil {
					if err := os.CopyFS(filepath.Join(base, "saved", d), os.DirFS(src)); err != nil {
						t.Logf("saving %s: %v", src, err)
					}
				}
			}
		}
		downCtx, cancel := context.WithTimeout(context.Background(), 80*time.Second)
		defer cancel()
		if err := run(downCtx, t, repo, logPath, env, "hack/down.sh"); err != nil {
			t.Errorf("hack/down.sh: %v\n%s", err, tail(logPath, 30))
		}
		if keep {
			t.Logf("kept %s: e2e.log (script output), walkthrough-out/, saved/ (control plane, hook and engine logs, archive)", base)
			return
		}
		os.RemoveAll(base)
	})

	upLogs := func() string {
		return fmt.Sprintf("--- %s\n%s\n--- hook.log\n%s\n--- metacontroller.log\n%s", logPath, tail(logPath, 40),
			tail(filepath.Join(state, "up", "logs", "hook.log"), 20),
			tail(filepath.Join(state, "up", "logs", "metacontroller.log"), 20))
	}
	if err := run(ctx, t, repo, logPath, env, "hack/up.sh"); err != nil {
		t.Fatalf("hack/up.sh: %v\n%s", err, upLogs())
	}
	if err := run(ctx, t, repo, logPath, env, "hack/walkthrough.sh"); err != nil {
		t.Fatalf("hack/walkthrough.sh: %v\n%s", err, upLogs())
	}

	var before beforeJSON
	readJSON(t, out, "before.json", &before)
	if before.NamespaceExists == nil || *before.NamespaceExists {
		t.Errorf("before.json: namespace_exists = %v, want false (only the CRD installed)", deref(before.NamespaceExists))
	}
	if before.UID == "" {
		t.Error("before.json: no uid")
	}

	var gen generationJSON
	readJSON(t, out, "generation.json", &gen)
	if gen.GenAfterLabel != gen.GenInitial {
		t.Errorf("generation.json: gen_after_label = %d, want gen_initial %d", gen.GenAfterLabel, gen.GenInitial)
	}
	if s := strings.TrimSpace(string(gen.StatusViaMain)); s != "null" {
		t.Errorf("generation.json: status_via_main = %s, want null (status subresource)", s)
	}
	if gen.GenAfterSpec != gen.GenInitial+1 {
		t.Errorf("generation.json: gen_after_spec = %d, want gen_initial+1 = %d", gen.GenAfterSpec, gen.GenInitial+1)
	}

	var rec reconcileJSON
	readJSON(t, out, "reconcile.json", &rec)
	if rec.SecondPassRVChanged == nil || *rec.SecondPassRVChanged {
		t.Errorf("reconcile.json: second_pass_rv_changed = %v, want false", deref(rec.SecondPassRVChanged))
	}
	if rec.QuotaUID == "" {
		t.Error("reconcile.json: no quota_uid")
	}
	if rec.NamespaceOwnerUID != before.UID {
		t.Errorf("reconcile.json: namespace_owner_uid = %q, want alpha's uid %q", rec.NamespaceOwnerUID, before.UID)
	}

	var drift driftJSON
	readJSON(t, out, "drift.json", &drift)
	if drift.RestoreSeconds == nil || *drift.RestoreSeconds != 0 {
		t.Errorf("drift.json: restore_seconds = %v, want 0 (restored within a second)", deref(drift.RestoreSeconds))
	}
	if drift.RestoreSecondsFractional == nil || *drift.RestoreSecondsFractional >= 1.0 {
		t.Errorf("drift.json: restore_seconds_fractional = %v, want < 1.0", deref(drift.RestoreSecondsFractional))
	}
	if drift.RestoredUID == "" || drift.RestoredUID == drift.DeletedUID {
		t.Errorf("drift.json: restored_uid %q, want a new uid (deleted %q)", drift.RestoredUID, drift.DeletedUID)
	}
	if drift.EditedTo != 99 || drift.RevertedTo != 6 {
		t.Errorf("drift.json: edited_to %d reverted_to %d, want 99 and 6", drift.EditedTo, drift.RevertedTo)
	}

	var cl cleanupJSON
	readJSON(t, out, "cleanup.json", &cl)
	if !cl.BlockedSeen {
		t.Error("cleanup.json: blocked_seen = false, want true (deleted beta still there with the engine's finalizer)")
	}
	if !cl.NamespaceGone {
		t.Error("cleanup.json: namespace_gone = false, want true")
	}
	if !cl.Archived {
		t.Errorf("cleanup.json: archived = false, want true (a record with uid %s in the archive dir)", cl.UID)
	}
	if cl.Finalizer != engineFinalizer {
		t.Errorf("cleanup.json: finalizer = %q, want %q", cl.Finalizer, engineFinalizer)
	}
	if !cl.ForeignFinalizer.Kept {
		t.Error("cleanup.json: foreign_finalizer.kept = false, want true (example.com/keep survives the engine)")
	}

	var cu catchupJSON
	readJSON(t, out, "catchup.json", &cu)
	if cu.ObservedWhileStopped >= cu.Generation {
		t.Errorf("catchup.json: observed_while_stopped = %d, want < generation %d", cu.ObservedWhileStopped, cu.Generation)
	}
	if cu.QuotaPodsWhileStopped != "6" {
		t.Errorf("catchup.json: quota_pods_while_stopped = %q, want \"6\"", cu.QuotaPodsWhileStopped)
	}
	if cu.ObservedAfterStart != cu.Generation {
		t.Errorf("catchup.json: observed_after_start = %d, want generation %d", cu.ObservedAfterStart, cu.Generation)
	}
	if cu.QuotaPodsAfterStart != "8" {
		t.Errorf("catchup.json: quota_pods_after_start = %q, want \"8\"", cu.QuotaPodsAfterStart)
	}

	var rep reportJSON
	readJSON(t, out, "report.json", &rep)
	want := reportJSON{
		CRDAloneCreatedNamespace:      false,
		StatusBumpsGeneration:         false,
		RestoreSeconds:                0,
		Finalizer:                     engineFinalizer,
		Archived:                      true,
		GenerationsBehindWhileStopped: cu.Generation - cu.ObservedWhileStopped,
		Trigger:                       "level",
	}
	if rep != want {
		t.Errorf("report.json = %+v\nwant          %+v", rep, want)
	}
	if rep.GenerationsBehindWhileStopped < 1 {
		t.Errorf("report.json: generations_behind_while_stopped = %d, want >= 1", rep.GenerationsBehindWhileStopped)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return "missing"
	}
	return *p
}
