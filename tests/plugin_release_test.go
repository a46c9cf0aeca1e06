package tests_test

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/tests/testenv"
)

// TestPluginRelease: hack/plugin.sh lays `kubectl teamspace` out as krew
// installs it: an archive holding the binary, and a manifest naming its
// URL and its sha256; bad arguments are one line and a non-zero exit.
func TestPluginRelease(t *testing.T) {
	script := filepath.Join(testenv.RepoRoot(), "hack", "plugin.sh")
	out := t.TempDir()
	cmd := exec.Command(script, "v0.1.0", "https://example.com/releases/v0.1.0/", out)
	cmd.Env = append(os.Environ(), "PLUGIN_PLATFORMS=linux/amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/plugin.sh: %v\n%s", err, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "teamspace.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct{ Name string }
		Spec       struct {
			Version   string `json:"version"`
			Platforms []struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
				URI    string `json:"uri"`
				SHA256 string `json:"sha256"`
				Bin    string `json:"bin"`
			} `json:"platforms"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		t.Fatalf("teamspace.yaml: %v\n%s", err, raw)
	}
	if m.APIVersion != "krew.googlecontainertools.github.com/v1alpha2" || m.Kind != "Plugin" || m.Metadata.Name != "teamspace" || m.Spec.Version != "v0.1.0" || len(m.Spec.Platforms) != 1 {
		t.Fatalf("teamspace.yaml:\n%s", raw)
	}
	p := m.Spec.Platforms[0]
	if p.URI != "https://example.com/releases/v0.1.0/kubectl-teamspace_linux_amd64.tar.gz" || p.Bin != "kubectl-teamspace" ||
		p.Selector.MatchLabels["os"] != "linux" || p.Selector.MatchLabels["arch"] != "amd64" {
		t.Errorf("platform %+v", p)
	}
	archive, err := os.ReadFile(filepath.Join(out, "kubectl-teamspace_linux_amd64.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(archive)
	if hex.EncodeToString(sum[:]) != p.SHA256 {
		t.Errorf("sha256 %s in the manifest, the archive's is %x", p.SHA256, sum)
	}
	zr, err := gzip.NewReader(strings.NewReader(string(archive)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	h, err := tr.Next()
	if err != nil || h.Name != "kubectl-teamspace" || h.Mode&0o111 == 0 {
		t.Fatalf("archive: %v %+v, want the executable kubectl-teamspace", err, h)
	}
	bin := filepath.Join(t.TempDir(), "kubectl-teamspace")
	f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, tr); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if b, err := exec.Command(bin, "--help").Output(); err != nil || !strings.Contains(string(b), "mine") {
		t.Errorf("the archived binary's --help: %v %s", err, b)
	}

	for _, args := range [][]string{{}, {"1.0", "https://x"}, {"v1.0.0", "x"}} {
		b, err := exec.Command(script, args...).CombinedOutput()
		if err == nil || strings.Count(string(b), "\n") != 1 || !strings.HasPrefix(string(b), "plugin.sh: error: ") {
			t.Errorf("hack/plugin.sh %v: %v, %q; want one line and a non-zero exit", args, err, b)
		}
	}
}
