package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestApplyRequestedByRelease: apply_requested_by (hack/lib.sh, used by
// install.sh and up.sh) applies requested-by.yaml where the API server
// serves MutatingAdmissionPolicy in admissionregistration.k8s.io/v1
// (Kubernetes 1.36+), and on an older release says so in one line and
// applies nothing. The API server is a stand-in kubectl that answers the
// discovery request as each release would and logs every call.
func TestApplyRequestedByRelease(t *testing.T) {
	for _, c := range []struct {
		release, discovery string
		applied            bool
	}{
		{"1.35", `{"kind":"APIResourceList","groupVersion":"admissionregistration.k8s.io/v1","resources":[{"name":"validatingadmissionpolicies","kind":"ValidatingAdmissionPolicy"}]}`, false},
		{"1.36", `{"kind":"APIResourceList","groupVersion":"admissionregistration.k8s.io/v1","resources":[{"name":"mutatingadmissionpolicies","kind":"MutatingAdmissionPolicy"},{"name":"validatingadmissionpolicies","kind":"ValidatingAdmissionPolicy"}]}`, true},
	} {
		t.Run(c.release, func(t *testing.T) {
			dir := t.TempDir()
			calls := filepath.Join(dir, "calls")
			fake := filepath.Join(dir, "kubectl")
			script := "#!/bin/sh\necho \"$*\" >>" + calls + "\n" +
				"[ \"$*\" = \"get --raw /apis/admissionregistration.k8s.io/v1\" ] && printf '%s\\n' \"$DISCOVERY\"\nexit 0\n"
			if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			r := runCmd(ctx, repoRoot(t), []string{"DISCOVERY=" + c.discovery}, nil, "bash", "-c",
				`source hack/lib.sh; say() { printf 'test: %s\n' "$*" >&2; }; apply_requested_by "$1"`, "bash", fake)
			if r.err != nil {
				t.Fatalf("apply_requested_by: %v", r)
			}
			log, _ := os.ReadFile(calls)
			applied := strings.Contains(string(log), "apply -f "+filepath.Join(repoRoot(t), "hack", "deploy", "requested-by.yaml"))
			if applied != c.applied {
				t.Errorf("requested-by.yaml applied: %v, want %v; kubectl calls:\n%s", applied, c.applied, log)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if c.applied {
				if strings.TrimSpace(r.stderr) != "" {
					t.Errorf("said %q, want nothing", r.stderr)
				}
			} else if len(lines) != 1 || !strings.Contains(lines[0], "no MutatingAdmissionPolicy v1 (Kubernetes < 1.36)") {
				t.Errorf("said %q, want one line that MutatingAdmissionPolicy v1 is missing", r.stderr)
			}
		})
	}
}
