package controlplane

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"

	"github.com/labhub/teamspace/tests/testenv"
)

// Binaries are the programs a control plane runs.
type Binaries struct {
	// KubeVersion is the Kubernetes release of KubeBinDir.
	KubeVersion string
	// KubeBinDir holds kube-apiserver, kube-controller-manager and kubectl.
	KubeBinDir string
	// Datastore is "kine" or "etcd"; DatastoreBin its program.
	Datastore    string
	DatastoreBin string
}

// libDefault reads the default of VAR from hack/lib.sh's
// `VAR="${VAR:-default}"` line, so that the versions have one source.
func libDefault(name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "hack", "lib.sh"))
	if err != nil {
		return "", err
	}
	re := regexp.MustCompile(`(?m)^` + name + `="\$\{` + name + `:-([^}]+)\}"`)
	m := re.FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("hack/lib.sh sets no default for %s", name)
	}
	return string(m[1]), nil
}

// Setting is the environment's value of name, else hack/lib.sh's default.
func Setting(name string) (string, error) {
	if v := os.Getenv(name); v != "" {
		return v, nil
	}
	return libDefault(name)
}

// CacheDir is TEAMSPACE_CACHE as hack/lib.sh computes it.
func CacheDir() (string, error) {
	if d := os.Getenv("TEAMSPACE_CACHE"); d != "" {
		return d, nil
	}
	if d := os.Getenv("XDG_CACHE_HOME"); d != "" {
		return filepath.Join(d, "teamspace"), nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".cache", "teamspace"), nil
}

// ErrMissing is wrapped by FindBinaries' error when a binary is not built
// or installed yet (as opposed to a broken setup).
var ErrMissing = errors.New("not built or installed")

// FindBinaries locates the binaries the way hack/lib.sh lays them out:
// $TEAMSPACE_CACHE/k8s-$KUBE_VERSION/bin (or $TEAMSPACE_KUBE_BIN_DIR), kine in
// $TEAMSPACE_CACHE/kine-$KINE_VERSION/bin, etcd on PATH; the datastore is
// $TEAMSPACE_DATASTORE (kine unless set). It builds nothing:
// hack/test.sh (hack/lib.sh) does.
func FindBinaries() (Binaries, error) {
	var b Binaries
	cache, err := CacheDir()
	if err != nil {
		return b, err
	}
	if b.KubeVersion, err = Setting("KUBE_VERSION"); err != nil {
		return b, err
	}
	b.KubeBinDir = filepath.Join(cache, "k8s-"+b.KubeVersion, "bin")
	if d := os.Getenv("TEAMSPACE_KUBE_BIN_DIR"); d != "" {
		// The Kubernetes changes proposed upstream (hack/lib.sh
		// ensure_proposed_kube; hack/bench.sh alone sets it).
		b.KubeBinDir = d
	}
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(b.KubeBinDir, name)); err != nil {
			return b, fmt.Errorf("%s %s %w: no %s (hack/test.sh builds it; or: bash -c 'source hack/lib.sh && ensure_kube_binaries')",
				name, b.KubeVersion, ErrMissing, filepath.Join(b.KubeBinDir, name))
		}
	}
	if b.Datastore, err = Setting("TEAMSPACE_DATASTORE"); err != nil {
		return b, err
	}
	switch b.Datastore {
	case "kine":
		v, err := Setting("KINE_VERSION")
		if err != nil {
			return b, err
		}
		b.DatastoreBin = filepath.Join(cache, "kine-"+v, "bin", "kine")
		if _, err := os.Stat(b.DatastoreBin); err != nil {
			return b, fmt.Errorf("kine %s %w: no %s (hack/test.sh builds it; or: bash -c 'source hack/lib.sh && ensure_kine')", v, ErrMissing, b.DatastoreBin)
		}
	case "etcd":
		if b.DatastoreBin, err = exec.LookPath("etcd"); err != nil {
			return b, fmt.Errorf("etcd %w: not on PATH (apt-get install etcd-server, or TEAMSPACE_DATASTORE=kine)", ErrMissing)
		}
	default:
		return b, fmt.Errorf("TEAMSPACE_DATASTORE=%q: want kine or etcd", b.Datastore)
	}
	return b, nil
}
