// Package controlplane runs a real, private Kubernetes control plane for the
// tests: a datastore (kine over SQLite, k3s's default, or etcd),
// kube-apiserver and kube-controller-manager on 127.0.0.1, no kubelet, no
// containers. It is the Go form of what Kubernetes' and Metacontroller's
// test/integration/framework do: ports the kernel hands out (net.Listen on
// port 0), certificates made with crypto/x509, every component a child
// process (exec.CommandContext) with its log in the state directory, one
// Stop for all of them, and the logs kept when something failed.
//
// Test packages use it from TestMain (see Main); hack/cluster.sh runs the
// same code for people (tests/controlplane/cmd/controlplane).
package controlplane

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// kcmControllers is what k3s runs: every controller that is on by default,
// and the token cleaner. A cluster test then sees what a tenant can reach
// through all of them (a Deployment's pods are created by the ReplicaSet
// controller, a Job's by the Job controller, ...), never a cluster made
// safer by controllers left out. The cloud controllers are off by
// themselves (no cloud provider).
var kcmControllers = []string{"*", "tokencleaner"}

// ProfilingEnv set to 1 turns on kube-apiserver's /debug/pprof (off
// otherwise, as in a hardened install): hack/bench/fleet profiles it.
const ProfilingEnv = "TEAMSPACE_PROFILING"

// AuditEnv set to 1 makes kube-apiserver write an audit record of every
// request it completes (level Metadata: who, what, which object, the
// user agent) to AuditLog in the state directory, for hack/bench/fleet to
// count a phase's requests by client, verb and resource (issue #68). Off
// by default: a write per request is a cost the other figures must not
// carry.
const AuditEnv = "TEAMSPACE_APISERVER_AUDIT"

// AuditLog is the audit log's file name in the state directory.
const AuditLog = "audit.log"

// auditPolicy records every completed request once, at Metadata: no
// bodies, and neither the received nor the started stage (a watch is
// recorded when it ends).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived", "ResponseStarted"]
rules:
- level: Metadata
`

// ControlPlane is a running control plane.
type ControlPlane struct {
	// Dir is the state directory: pki/, logs/, data/, admin.kubeconfig.
	Dir string
	// Kubeconfig is the admin kubeconfig (system:masters).
	Kubeconfig string
	// APIServerURL is https://127.0.0.1:<port>.
	APIServerURL string
	Binaries     Binaries

	log          *slog.Logger
	pki          *pki
	http         *http.Client
	datastoreURL string
	stopOnce     sync.Once

	mu       sync.Mutex // guards procs and stopping: a supervisor swaps a restarted process in
	procs    []*process
	stopping bool
}

// process is one component.
type process struct {
	name    string
	bin     string
	args    []string
	cmd     *exec.Cmd
	logPath string
	cancel  context.CancelFunc
	done    chan struct{}
	err     error
}

// Start brings a control plane up in dir (created; it should be empty) and
// returns once the API server is ready and the controllers act. On error
// everything started is stopped again, and dir with the logs is kept.
func Start(ctx context.Context, dir string, bins Binaries, log *slog.Logger) (*ControlPlane, error) {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	start := time.Now()
	c := &ControlPlane{Dir: dir, Binaries: bins, log: log, Kubeconfig: filepath.Join(dir, "admin.kubeconfig")}
	for _, d := range []string{"logs", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, err
		}
	}
	var err error
	if c.pki, err = newPKI(filepath.Join(dir, "pki")); err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := c.clientTLS(); err != nil {
		return nil, err
	}
	for _, step := range []struct {
		name string
		run  func(context.Context) error
	}{
		{bins.Datastore, c.startDatastore},
		{"kube-apiserver", c.startAPIServer},
		{"kube-controller-manager", c.startControllerManager},
	} {
		if err := withPortRetry(ctx, step.run); err != nil {
			c.Stop()
			return nil, fmt.Errorf("%s: %w (logs in %s)", step.name, err, filepath.Join(dir, "logs"))
		}
	}
	log.Info("control plane up", "apiserver", c.APIServerURL, "datastore", bins.Datastore,
		"kubernetes", bins.KubeVersion, "dir", dir, "took", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// errPortTaken says a component lost the race for a port picked free.
var errPortTaken = errors.New("port taken meanwhile")

// withPortRetry runs start again (with new ports) when a port picked free
// was taken by someone else before the component bound it.
func withPortRetry(ctx context.Context, start func(context.Context) error) error {
	var err error
	for range 3 {
		if err = start(ctx); !errors.Is(err, errPortTaken) {
			return err
		}
	}
	return err
}

func freePort() (string, error) {
	addr, err := testenv.FreeLoopbackAddr()
	if err != nil {
		return "", err
	}
	_, port, err := net.SplitHostPort(addr)
	return port, err
}

// run starts one component and adds it to those Stop stops.
func (c *ControlPlane) run(name, bin string, args ...string) (*process, error) {
	p, err := c.spawn(name, bin, args...)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.procs = append(c.procs, p)
	c.mu.Unlock()
	return p, nil
}

// spawn starts one component, its output appended to logs/NAME.log and
// its PID in run/NAME.pid (what a fault run kills). Its context is
// cancelled by stop: the child gets SIGTERM (cmd.Cancel), and SIGKILL 10 s
// later if still there (cmd.WaitDelay); and SIGKILL if this process dies
// first (Pdeathsig), so none outlives a crashed test binary.
func (c *ControlPlane) spawn(name, bin string, args ...string) (*process, error) {
	logPath := filepath.Join(c.Dir, "logs", name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n=== %s: %s %s\n", time.Now().UTC().Format(time.RFC3339), bin, strings.Join(args, " "))
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return nil, err
	}
	p := &process{name: name, bin: bin, args: args, cmd: cmd, logPath: logPath, cancel: cancel, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	if err := os.MkdirAll(filepath.Join(c.Dir, "run"), 0o700); err == nil {
		_ = os.WriteFile(c.PIDFile(name), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o600)
	}
	c.log.Debug("started", "component", name, "pid", cmd.Process.Pid)
	return p, nil
}

// PIDFile is where the PID of a component (kine or etcd, kube-apiserver,
// kube-controller-manager) is kept while it runs.
func (c *ControlPlane) PIDFile(name string) string { return filepath.Join(c.Dir, "run", name+".pid") }

// Supervise restarts every component that exits while the control plane
// is not being stopped, after the pause given, with the same flags and
// ports: what each one's systemd unit does on a k3s-like server
// (Restart=always, RestartSec). A fault run (issue #67) kills them with
// SIGKILL and relies on this; the tests' own control plane does not
// supervise, so that a component that dies there fails the test.
func (c *ControlPlane) Supervise(after time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.procs {
		go c.supervise(i, after)
	}
}

func (c *ControlPlane) supervise(i int, after time.Duration) {
	for {
		c.mu.Lock()
		p := c.procs[i]
		c.mu.Unlock()
		<-p.done
		time.Sleep(after)
		c.mu.Lock()
		if c.stopping {
			c.mu.Unlock()
			return
		}
		c.log.Warn("component exited; starting it again", "component", p.name, "err", p.err, "after", after)
		np, err := c.spawn(p.name, p.bin, p.args...)
		if err != nil {
			c.mu.Unlock()
			c.log.Error("component could not be started again", "component", p.name, "err", err)
			return
		}
		c.procs[i] = np
		c.mu.Unlock()
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop cancels the process's context (SIGTERM, SIGKILL after 10 s) and
// waits until it has exited.
func (p *process) stop() {
	p.cancel()
	<-p.done
}

// await polls ready until it succeeds, the process exits (its log's tail in
// the error; errPortTaken when it could not bind) or timeout passes.
func (c *ControlPlane) await(ctx context.Context, p *process, timeout time.Duration, what string, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = ready(ctx); err == nil {
			return nil
		}
		if p.exited() {
			tail := Tail(p.logPath, 30)
			c.dropProcess(p)
			if strings.Contains(tail, "address already in use") {
				return errPortTaken
			}
			return fmt.Errorf("exited (%v) before %s; last lines of %s:\n%s", p.err, what, p.logPath, tail)
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s not reached in %s: %v; last lines of %s:\n%s", what, timeout, err, p.logPath, Tail(p.logPath, 30))
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (c *ControlPlane) dropProcess(p *process) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, q := range c.procs {
		if q == p {
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return
		}
	}
}

func (c *ControlPlane) startDatastore(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	var p *process
	switch c.Binaries.Datastore {
	case "kine":
		db := filepath.Join(c.Dir, "data", "kine")
		if err := os.MkdirAll(db, 0o700); err != nil {
			return err
		}
		p, err = c.run("kine", c.Binaries.DatastoreBin,
			"--listen-address=127.0.0.1:"+port,
			"--metrics-bind-address=0", // no metrics server
			"--endpoint=sqlite://"+filepath.Join(db, "state.db")+"?_journal=WAL&cache=shared&_busy_timeout=30000&_txlock=immediate")
		if err != nil {
			return err
		}
	case "etcd":
		peer, err := freePort()
		if err != nil {
			return err
		}
		data := filepath.Join(c.Dir, "data", "etcd")
		_ = os.RemoveAll(data)
		client, peerURL := "http://127.0.0.1:"+port, "http://127.0.0.1:"+peer
		args := []string{"--name=teamspace", "--data-dir=" + data,
			"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peerURL, "--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=teamspace=" + peerURL, "--initial-cluster-state=new",
			"--logger=zap", "--log-level=warn"}
		// Throwaway data: skip fsync when this etcd knows how (3.5+).
		if out, _ := exec.Command(c.Binaries.DatastoreBin, "--help").CombinedOutput(); strings.Contains(string(out), "--unsafe-no-fsync") {
			args = append(args, "--unsafe-no-fsync")
		}
		if p, err = c.run("etcd", c.Binaries.DatastoreBin, args...); err != nil {
			return err
		}
	}
	c.datastoreURL = "http://127.0.0.1:" + port
	return c.await(ctx, p, 30*time.Second, "accepting connections", func(context.Context) error {
		conn, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			conn.Close()
		}
		return err
	})
}

func (c *ControlPlane) startAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.APIServerURL = "https://127.0.0.1:" + port
	if err := c.pki.writeKubeconfig(c.Kubeconfig, c.APIServerURL, "admin"); err != nil {
		return err
	}
	if err := c.pki.writeKubeconfig(filepath.Join(c.Dir, "controller-manager.kubeconfig"), c.APIServerURL, "controller-manager"); err != nil {
		return err
	}
	pk := c.pki.path
	args := []string{"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + port,
		"--etcd-servers=" + c.datastoreURL,
		"--tls-cert-file=" + pk("apiserver.crt"),
		"--tls-private-key-file=" + pk("apiserver.key"),
		"--client-ca-file=" + pk("ca.crt"),
		"--authorization-mode=RBAC",
		// As k3s: privileged pods are allowed by the API server and refused
		// (or not) by Pod Security per namespace. With the default (false)
		// every privileged pod is refused before Pod Security is asked, and
		// a test of an escalation through a TeamSpace would prove nothing.
		"--allow-privileged=true",
		"--service-cluster-ip-range=" + serviceCIDR,
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--api-audiences=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + pk("sa.pub"),
		"--service-account-signing-key-file=" + pk("sa.key"),
		"--endpoint-reconciler-type=none",
		"--profiling=" + strconv.FormatBool(os.Getenv(ProfilingEnv) == "1")}
	if os.Getenv(AuditEnv) == "1" {
		policy := filepath.Join(c.Dir, "audit-policy.yaml")
		if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
			return err
		}
		// --audit-log-maxsize=0: one file, never rotated (a rotation
		// would lose the start of a phase being counted)
		args = append(args, "--audit-policy-file="+policy, "--audit-log-path="+filepath.Join(c.Dir, AuditLog),
			"--audit-log-format=json", "--audit-log-maxsize=0", "--audit-log-mode=blocking")
	}
	p, err := c.run("kube-apiserver", filepath.Join(c.Binaries.KubeBinDir, "kube-apiserver"), args...)
	if err != nil {
		return err
	}
	return c.await(ctx, p, 120*time.Second, "/readyz ok", func(ctx context.Context) error {
		return c.getOK(ctx, c.APIServerURL+"/readyz")
	})
}

func (c *ControlPlane) startControllerManager(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	kc, pk := filepath.Join(c.Dir, "controller-manager.kubeconfig"), c.pki.path
	p, err := c.run("kube-controller-manager", filepath.Join(c.Binaries.KubeBinDir, "kube-controller-manager"),
		"--kubeconfig="+kc,
		"--authentication-kubeconfig="+kc,
		"--authorization-kubeconfig="+kc,
		"--bind-address=127.0.0.1",
		"--secure-port="+port,
		"--tls-cert-file="+pk("controller-manager-serving.crt"),
		"--tls-private-key-file="+pk("controller-manager-serving.key"),
		"--leader-elect=false",
		"--controllers="+strings.Join(kcmControllers, ","),
		"--use-service-account-credentials=false",
		"--service-account-private-key-file="+pk("sa.key"),
		"--root-ca-file="+pk("ca.crt"),
		"--cluster-name=teamspace",
		"--profiling=false")
	if err != nil {
		return err
	}
	if err := c.await(ctx, p, 60*time.Second, "/healthz ok", func(ctx context.Context) error {
		return c.getOK(ctx, "https://127.0.0.1:"+port+"/healthz")
	}); err != nil {
		return err
	}
	// The controllers act, not just answer: the default service account of
	// the default namespace appears.
	return c.await(ctx, p, 60*time.Second, "the default service account", func(ctx context.Context) error {
		return c.getOK(ctx, c.APIServerURL+"/api/v1/namespaces/default/serviceaccounts/default")
	})
}

// clientTLS sets up the HTTP client the readiness checks use: our CA, the
// admin's client certificate.
func (c *ControlPlane) clientTLS() error {
	cert, err := tls.LoadX509KeyPair(c.pki.path("admin.crt"), c.pki.path("admin.key"))
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	pool.AddCert(c.pki.ca)
	c.http = &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}
	return nil
}

func (c *ControlPlane) getOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Env is the environment that points kubectl (and anything else) at this
// control plane: KUBECONFIG, and PATH with its kubectl first.
func (c *ControlPlane) Env() []string {
	return []string{
		"KUBECONFIG=" + c.Kubeconfig,
		"PATH=" + c.Binaries.KubeBinDir + string(os.PathListSeparator) + os.Getenv("PATH"),
	}
}

// Stop stops every component, the last started first, and waits for them.
// It is safe to call more than once.
func (c *ControlPlane) Stop() {
	c.stopOnce.Do(func() {
		c.mu.Lock()
		c.stopping = true
		procs := slices.Clone(c.procs)
		c.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop()
			_ = os.Remove(c.PIDFile(procs[i].name))
		}
		c.log.Info("control plane stopped", "dir", c.Dir)
	})
}

// Logs returns the last n lines of every component's log, for a failure.
func (c *ControlPlane) Logs(n int) string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(c.Dir, "logs", "*.log"))
	for _, f := range files {
		fmt.Fprintf(&b, "--- last lines of %s:\n%s\n", f, Tail(f, n))
	}
	return b.String()
}

// Tail returns the last n lines of a file.
func Tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
