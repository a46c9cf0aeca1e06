// Package cluster_test checks TeamSpace's Kubernetes objects against a real
// API server: the CRD (validation, defaulting, what bumps generation), every
// child in the hook's golden answers, and the garbage collection that
// removes a team's namespace with its TeamSpace.
//
// It drives the cluster with kubectl (the v1.34 one hack/cluster.sh builds,
// found on PATH) and KUBECONFIG from the environment; without KUBECONFIG it
// skips. Run it through hack/test.sh, or by hand:
//
//	hack/cluster.sh up && eval "$(hack/cluster.sh env)"
//	go test -count=1 ./tests/cluster
//	hack/cluster.sh down
//
// Each test makes names of its own (a random suffix), so two runs, or other
// packages, can share a cluster; the CRD is applied (idempotently) and left
// installed, as other packages running at the same time may rely on it.
package cluster_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	crdName      = "teamspaces.platform.labhub.io"
	groupVersion = "platform.labhub.io/v1alpha1"
	// kubectlTimeout bounds every single kubectl call.
	kubectlTimeout = 90 * time.Second
)

// needCluster skips the test when no cluster was given.
func needCluster(t *testing.T) {
	t.Helper()
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("no cluster: run via hack/test.sh or export $(hack/cluster.sh env)")
	}
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Fatalf("KUBECONFIG is set but kubectl is not on PATH (hack/cluster.sh env puts the one it builds there): %v", err)
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// suffix returns a random lowercase hex string of n characters.
func suffix(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, (n+1)/2)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)[:n]
}

// kubectlError carries what kubectl said when it failed.
type kubectlError struct {
	args   []string
	err    error
	stderr string
}

func (e *kubectlError) Error() string {
	return fmt.Sprintf("kubectl %s: %v: %s", strings.Join(e.args, " "), e.err, strings.TrimSpace(e.stderr))
}

// kubectl runs kubectl with stdin (may be empty) and returns its stdout;
// on failure the error holds its stderr.
func kubectl(t *testing.T, stdin string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &kubectlError{args: args, err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

// mustKubectl is kubectl that fails the test on error.
func mustKubectl(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := kubectl(t, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func isNotFound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "NotFound")
}

// getObject reads one object as a map; found is false when it does not exist.
func getObject(t *testing.T, args ...string) (obj map[string]any, found bool) {
	t.Helper()
	out, err := kubectl(t, "", append([]string{"get", "-o", "json"}, args...)...)
	if isNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("kubectl get %v: %v", args, err)
	}
	return obj, true
}

// field walks a decoded object along keys; nil when absent.
func field(obj map[string]any, keys ...string) any {
	var cur any = obj
	for _, k := range keys {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func str(v any) string {
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// eventually polls cond every interval until it returns true or timeout
// passes; it returns whether cond held.
func eventually(timeout, interval time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(interval)
	}
}

// installCRD applies crd.yaml from the repository root and waits until it
// is Established. It is idempotent and leaves the CRD installed.
func installCRD(t *testing.T) {
	t.Helper()
	crd := filepath.Join(repoRoot(t), "crd.yaml")
	if _, err := os.Stat(crd); err != nil {
		t.Fatalf("crd.yaml: %v", err)
	}
	mustKubectl(t, "", "apply", "-f", crd)
	mustKubectl(t, "", "wait", "--for=condition=established", "--timeout=60s", "crd/"+crdName)
	// Established means served by the API server; give its discovery a
	// moment too, so that kubectl finds the kind right away.
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		_, err := kubectl(t, "", "get", "teamspaces.platform.labhub.io", "--ignore-not-found")
		return err == nil
	}) {
		t.Fatal("teamspaces are not served 30s after the CRD became Established")
	}
}

// teamSpace renders a TeamSpace manifest; spec is its spec as JSON-able map
// (nil leaves spec out).
func teamSpace(name string, spec map[string]any) string {
	obj := map[string]any{
		"apiVersion": groupVersion,
		"kind":       "TeamSpace",
		"metadata":   map[string]any{"name": name},
	}
	if spec != nil {
		obj["spec"] = spec
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// deleteOnCleanup deletes the object when the test ends, without waiting.
func deleteOnCleanup(t *testing.T, args ...string) {
	t.Helper()
	t.Cleanup(func() {
		if _, err := kubectl(t, "", append([]string{"delete", "--ignore-not-found", "--wait=false"}, args...)...); err != nil {
			t.Logf("cleanup: %v", err)
		}
	})
}

// TestKubectlVersion records which kubectl and API server the tests use; a
// kubectl of another minor version than the server is worth knowing about.
func TestKubectlVersion(t *testing.T) {
	needCluster(t)
	out := mustKubectl(t, "", "version", "-o", "json")
	var v struct {
		Client struct{ GitVersion string } `json:"clientVersion"`
		Server struct{ GitVersion string } `json:"serverVersion"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("kubectl version: %v\n%s", err, out)
	}
	t.Logf("kubectl %s, API server %s", v.Client.GitVersion, v.Server.GitVersion)
	if v.Server.GitVersion == "" {
		t.Fatalf("no server version in %s", out)
	}
	minor := func(s string) string {
		parts := strings.SplitN(s, ".", 3)
		if len(parts) < 2 {
			return s
		}
		return parts[0] + "." + parts[1]
	}
	if minor(v.Client.GitVersion) != minor(v.Server.GitVersion) {
		t.Errorf("kubectl %s is not of the API server's version %s: put hack/cluster.sh's bin dir first on PATH (eval \"$(hack/cluster.sh env)\")",
			v.Client.GitVersion, v.Server.GitVersion)
	}
}
