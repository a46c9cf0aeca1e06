// Package plugin is `kubectl teamspace`: its flags are kubectl's own
// (k8s.io/cli-runtime: --kubeconfig, --context, -n, --as, ...), and each
// command works with the rights the shipped roles give, saying what it
// cannot show and why.
package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"
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
	err := runCommand(ctx, config, rest, *output, out)
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

// commands are the plugin's commands: how many arguments each takes
// after its name, and what it answers, printed by printStructured or its
// own table.
var commands = map[string]struct {
	args   int
	argsIs string
	run    func(ctx context.Context, c *clients, args []string, output string, out io.Writer) error
}{
	"mine": {0, "mine takes no arguments", func(ctx context.Context, c *clients, _ []string, output string, out io.Writer) error {
		m, err := mine(ctx, c)
		if err != nil {
			return err
		}
		return printMine(m, output, out)
	}},
	"show": {1, "show takes one TeamSpace name", func(ctx context.Context, c *clients, args []string, output string, out io.Writer) error {
		s, err := show(ctx, c, args[0])
		if err != nil {
			return err
		}
		return printShow(s, output, out)
	}},
	"allowance": {0, "allowance takes no arguments", func(ctx context.Context, c *clients, _ []string, output string, out io.Writer) error {
		a, err := allowanceOf(ctx, c)
		if err != nil {
			return err
		}
		return printAllowance(a, output, out)
	}},
}

// runCommand runs command args[0] with the rest of args.
func runCommand(ctx context.Context, config *genericclioptions.ConfigFlags, args []string, output string, out io.Writer) error {
	cmd, ok := commands[args[0]]
	switch {
	case !ok:
		return usageError(fmt.Sprintf("unknown command %q", args[0]))
	case len(args)-1 != cmd.args:
		return usageError(cmd.argsIs)
	}
	c, err := connect(config)
	if err != nil {
		return err
	}
	return cmd.run(ctx, c, args[1:], output, out)
}

// printStructured writes what a command answers as json or yaml (-o).
func printStructured(v any, output string, out io.Writer) error {
	if output == "yaml" {
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		_, err = out.Write(b)
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "%s\n", b)
	return err
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
