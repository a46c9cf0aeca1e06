// Command controlplane runs the tests' control plane (tests/controlplane)
// for people: hack/cluster.sh starts it in the background, and it runs until
// SIGTERM or SIGINT, then stops every component. Once the control plane is
// ready it writes STATE/env, the shell lines that point kubectl at it.
//
//	controlplane --state-dir=DIR [--restart-after=2s]
//
// With --restart-after above 0 a component that exits is started again
// after that pause, as its systemd unit would (Restart=always): a fault
// run (issue #67) kills them with SIGKILL. Each one's PID is in
// STATE/run/NAME.pid.
//
// The binaries are found like the tests find them (TEAMSPACE_CACHE,
// KUBE_VERSION, TEAMSPACE_DATASTORE, KINE_VERSION; hack/lib.sh builds them).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/labhub/teamspace/tests/controlplane"
)

func main() {
	if err := run(); err != nil {
		slog.Error("control plane failed", "err", err)
		os.Exit(1)
	}
}

func run() error {
	stateDir := flag.String("state-dir", "", "state directory (certificates, data, logs, env); required")
	restartAfter := flag.Duration("restart-after", 0, "start a component that exited again after this pause (0: never; the control plane is then down until restarted)")
	flag.Parse()
	if *stateDir == "" {
		return fmt.Errorf("--state-dir is required")
	}
	dir, err := filepath.Abs(*stateDir)
	if err != nil {
		return err
	}
	bins, err := controlplane.FindBinaries()
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	startCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	cp, err := controlplane.Start(startCtx, dir, bins, log)
	cancel()
	if err != nil {
		return err
	}
	defer cp.Stop()
	if *restartAfter > 0 {
		cp.Supervise(*restartAfter)
	}
	var env strings.Builder
	for _, kv := range cp.Env() {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&env, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&env, "export TEAMSPACE_STATE=%s\n", shellQuote(dir))
	tmp := filepath.Join(dir, "env.tmp")
	if err := os.WriteFile(tmp, []byte(env.String()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, "env")); err != nil {
		return err
	}
	<-ctx.Done()
	log.Info("stopping on signal")
	return nil
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
