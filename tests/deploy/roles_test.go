package deploy

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestShippedRoles applies hack/deploy/roles.yaml and asks the API server,
// impersonating users bound to the roles, what they grant: a requester may
// create and read TeamSpaces but not change or delete them; the built-in
// view/edit/admin roles gain TeamSpace read (view) and write (edit, admin)
// through aggregation.
func TestShippedRoles(t *testing.T) {
	needCluster(t)
	root := repoRoot(t)
	kubectlOK(t, "apply", "--server-side", "--force-conflicts", "--field-manager=teamspace-deploy-test",
		"-f", filepath.Join(root, "crd.yaml"), "-f", filepath.Join(root, "hack", "deploy", "roles.yaml"))
	kubectlOK(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/teamspaces.platform.labhub.io")
	bindings := map[string]string{ // ClusterRoleBinding → ClusterRole, subject group = binding name
		"ts-test-requesters": "teamspace-requester",
		"ts-test-viewers":    "view",
		"ts-test-editors":    "edit",
		"ts-test-admins":     "admin",
	}
	for b, role := range bindings {
		kubectlOK(t, "create", "clusterrolebinding", b, "--clusterrole="+role, "--group="+b)
	}
	t.Cleanup(func() {
		for b := range bindings {
			kubectl(t, "delete", "--ignore-not-found", "clusterrolebinding", b)
		}
		kubectl(t, "delete", "--ignore-not-found", "-f", filepath.Join(root, "hack", "deploy", "roles.yaml"))
	})
	tests := []struct {
		group, verb, resource string
		want                  bool
	}{
		{"ts-test-requesters", "create", "teamspaces.platform.labhub.io", true},
		{"ts-test-requesters", "get", "teamspaces.platform.labhub.io", true},
		{"ts-test-requesters", "list", "teamspaces.platform.labhub.io", true},
		{"ts-test-requesters", "watch", "teamspaces.platform.labhub.io", true},
		{"ts-test-requesters", "update", "teamspaces.platform.labhub.io", false},
		{"ts-test-requesters", "delete", "teamspaces.platform.labhub.io", false},
		{"ts-test-requesters", "update", "teamspaces.platform.labhub.io/status", false},
		{"ts-test-requesters", "create", "namespaces", false},
		{"ts-test-viewers", "list", "teamspaces.platform.labhub.io", true},
		{"ts-test-viewers", "create", "teamspaces.platform.labhub.io", false},
		{"ts-test-editors", "patch", "teamspaces.platform.labhub.io", true},
		{"ts-test-editors", "delete", "teamspaces.platform.labhub.io", true},
		{"ts-test-admins", "create", "teamspaces.platform.labhub.io", true},
		{"ts-test-admins", "get", "teamspaces.platform.labhub.io", true},
		{"ts-test-admins", "update", "teamspaces.platform.labhub.io/status", false},
	}
	for _, tc := range tests {
		name := tc.group + " " + tc.verb + " " + tc.resource
		t.Run(name, func(t *testing.T) {
			res, sub, _ := strings.Cut(tc.resource, "/")
			args := []string{"auth", "can-i", "--as=someone", "--as-group=" + tc.group, tc.verb, res}
			if sub != "" {
				args = append(args, "--subresource="+sub)
			}
			// Aggregation is done by a controller: wait a little for it.
			deadline := time.Now().Add(20 * time.Second)
			for {
				got := strings.TrimSpace(kubectl(t, args...).stdout)
				if (got == "yes") == tc.want {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("can-i %s: %q, want %v", name, got, tc.want)
				}
				time.Sleep(250 * time.Millisecond)
			}
		})
	}
}
