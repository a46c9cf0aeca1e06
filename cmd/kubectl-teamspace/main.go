// Command kubectl-teamspace is the kubectl plugin of TeamSpace: kubectl
// finds it on PATH as `kubectl teamspace`. Everything is in package
// plugin; main only runs it and exits with its code.
//
//	go install github.com/labhub/teamspace/cmd/kubectl-teamspace@latest
//	kubectl teamspace mine
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/labhub/teamspace/cmd/kubectl-teamspace/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := plugin.Run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
