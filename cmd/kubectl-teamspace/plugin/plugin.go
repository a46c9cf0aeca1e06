// Package plugin is `kubectl teamspace`: its flags are kubectl's own
// (k8s.io/cli-runtime: --kubeconfig, --context, -n, --as, ...), and each
// command works with the rights the shipped roles give, saying what it
// cannot show and why.
package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

const usage = `kubectl teamspace: TeamSpaces as their owners and requesters see them

Commands:
  mine        the TeamSpaces I own or requested (no right to list them needed)
  show NAME   one TeamSpace: owners, requester, Ready in plain words, and
              each namespace's use of its quota
  allowance   what I hold of the platform's allowance per requester, what I
              may still ask for, and the limits of one TeamSpace

Flags: kubectl's (--kubeconfig, --context, --as, ...), and
  -o, --output   table (default), json or yaml
`

// Run runs the plugin with args (without the program name), writing to
// out and errOut; it returns the exit code. An error is one line on
// errOut, never a stack trace.
func Run(ctx context.Context, args []string, out, errOut io.Writer) int {
	flags := pflag.NewFlagSet("kubectl-teamspace", pflag.ContinueOnError)
	flags.SetOutput(io.Discard)
	config := genericclioptions.NewConfigFlags(true)
	config.AddFlags(flags)
	output := flags.StringP("output", "o", "table", "table, json or yaml")
	help := flags.BoolP("help", "h", false, "this help")
	if err := flags.Parse(args); err != nil {
		fmt.Fprintf(errOut, "error: %v (kubectl teamspace --help)\n", err)
		return 2
	}
	rest := flags.Args()
	if *help || len(rest) == 0 {
		fmt.Fprint(out, usage)
		if *help {
			return 0
		}
		return 2
	}
	if *output != "table" && *output != "json" && *output != "yaml" {
		fmt.Fprintf(errOut, "error: --output %q: want table, json or yaml\n", *output)
		return 2
	}
	var err error
	switch rest[0] {
	case "mine":
		if len(rest) != 1 {
			err = usageError("mine takes no arguments")
			break
		}
		var c *clients
		if c, err = connect(config); err == nil {
			err = runMine(ctx, c, *output, out)
		}
	case "show":
		if len(rest) != 2 {
			err = usageError("show takes one TeamSpace name")
			break
		}
		var c *clients
		if c, err = connect(config); err == nil {
			err = runShow(ctx, c, rest[1], *output, out)
		}
	case "allowance":
		if len(rest) != 1 {
			err = usageError("allowance takes no arguments")
			break
		}
		var c *clients
		if c, err = connect(config); err == nil {
			err = runAllowance(ctx, c, *output, out)
		}
	default:
		err = usageError(fmt.Sprintf("unknown command %q", rest[0]))
	}
	if err != nil {
		fmt.Fprintf(errOut, "error: %s\n", oneLine(err))
		var u usageError
		if errors.As(err, &u) {
			return 2
		}
		return 1
	}
	return 0
}

type usageError string

func (u usageError) Error() string { return string(u) + " (kubectl teamspace --help)" }

// clients are what the commands talk to the API server with.
type clients struct {
	kube kubernetes.Interface
	rest *rest.Config
	// namespace is -n, else the kubeconfig context's, else "default".
	namespace string
}

func connect(config *genericclioptions.ConfigFlags) (*clients, error) {
	cfg, err := config.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to: %v", err)
	}
	ns, _, err := config.ToRawKubeConfigLoader().Namespace()
	if err != nil || ns == "" {
		ns = "default"
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &clients{kube: kube, rest: cfg, namespace: ns}, nil
}

// oneLine is an error's text on one line.
func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}
