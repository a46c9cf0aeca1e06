package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

const (
	engineSA   = "system:serviceaccount:teamspace-system:metacontroller"
	engineRole = "teamspace-metacontroller"
)

// applyRBAC applies hack/deploy/rbac.yaml (and what the checks need to
// resolve resource names: Metacontroller's CRDs and crd.yaml) and removes
// the RBAC again after the test unless it was there before.
func applyRBAC(t *testing.T) {
	t.Helper()
	root := repoRoot(t)
	hadRole := exists(t, "clusterrole", engineRole)
	kubectlOK(t, "apply", "--server-side", "--force-conflicts", "--field-manager=teamspace-deploy-test",
		"-f", metacontrollerCRDs(t), "-f", filepath.Join(root, "crd.yaml"), "-f", filepath.Join(root, "hack", "deploy", "rbac.yaml"))
	kubectlOK(t, "wait", "--for=condition=Established", "--timeout=60s",
		"crd/teamspaces.platform.labhub.io", "crd/compositecontrollers.metacontroller.k8s.io")
	if !hadRole {
		t.Cleanup(func() {
			kubectl(t, "delete", "--ignore-not-found", "clusterrolebinding", engineRole)
			kubectl(t, "delete", "--ignore-not-found", "clusterrole", engineRole)
			kubectl(t, "delete", "--ignore-not-found", "-n", "teamspace-system", "serviceaccount", "metacontroller")
		})
	}
}

// TestRBACBounds asks the API server (kubectl auth can-i, impersonating the
// engine's ServiceAccount with its groups) what rbac.yaml grants: what the
// engine needs, and none of the things it must not have.
func TestRBACBounds(t *testing.T) {
	needCluster(t)
	applyRBAC(t)
	tests := []struct {
		name string
		args []string // verb resource [flags]
		want bool
	}{
		// Needed.
		{"watch CRDs", []string{"watch", "customresourcedefinitions.apiextensions.k8s.io"}, true},
		{"list CompositeControllers", []string{"list", "compositecontrollers.metacontroller.k8s.io"}, true},
		{"watch ControllerRevisions everywhere", []string{"watch", "controllerrevisions.metacontroller.k8s.io", "--all-namespaces"}, true},
		{"update TeamSpaces (finalizer)", []string{"update", "teamspaces.platform.labhub.io"}, true},
		{"update TeamSpace status", []string{"update", "teamspaces.platform.labhub.io", "--subresource=status"}, true},
		{"create namespaces", []string{"create", "namespaces"}, true},
		{"delete namespaces", []string{"delete", "namespaces"}, true},
		{"patch quotas in a team namespace", []string{"patch", "resourcequotas", "-n", "team-x"}, true},
		{"create events", []string{"create", "events", "-n", "default"}, true},
		{"create LimitRanges in a team namespace", []string{"create", "limitranges", "-n", "team-x"}, true},
		{"update LimitRanges", []string{"update", "limitranges", "-n", "team-x"}, true},
		{"watch LimitRanges everywhere", []string{"watch", "limitranges", "--all-namespaces"}, true},
		{"create RoleBindings in a team namespace", []string{"create", "rolebindings.rbac.authorization.k8s.io", "-n", "team-x"}, true},
		{"delete RoleBindings", []string{"delete", "rolebindings.rbac.authorization.k8s.io", "-n", "team-x"}, true},
		{"watch RoleBindings everywhere", []string{"watch", "rolebindings.rbac.authorization.k8s.io", "--all-namespaces"}, true},
		{"create NetworkPolicies in a team namespace", []string{"create", "networkpolicies.networking.k8s.io", "-n", "team-x"}, true},
		{"patch NetworkPolicies", []string{"patch", "networkpolicies.networking.k8s.io", "-n", "team-x"}, true},
		{"bind ClusterRole admin", []string{"bind", "clusterroles.rbac.authorization.k8s.io/admin"}, true},
		// The owners' ClusterRole and binding (issue #27); owner-access.yaml
		// bounds these to one name and shape (tests/cluster
		// TestEngineOwnerAccessBounded).
		{"create ClusterRoles", []string{"create", "clusterroles.rbac.authorization.k8s.io"}, true},
		{"create ClusterRoleBindings", []string{"create", "clusterrolebindings.rbac.authorization.k8s.io"}, true},
		// The platform's templates (issue #53): ConfigMaps and Secrets in
		// teamspace-system are related objects of every TeamSpace, their
		// copies children; the engine's informers are cluster-wide, and RBAC
		// cannot name namespaces by label, so it reads and may write them
		// everywhere. templates.yaml's teamspace-engine-copies holds its
		// writes to its copies in team namespaces (tests/cluster
		// TestEngineWritesOnlyCopies); the limits ConfigMap too is a related
		// object (a requester's allowance).
		{"watch ConfigMaps everywhere", []string{"watch", "configmaps", "--all-namespaces"}, true},
		{"watch Secrets everywhere", []string{"watch", "secrets", "--all-namespaces"}, true},
		{"create ConfigMaps (copies)", []string{"create", "configmaps", "-n", "team-x"}, true},
		{"update Secrets (copies)", []string{"update", "secrets", "-n", "team-x"}, true},
		{"bind ClusterRole view (the platform's binding templates)", []string{"bind", "clusterroles.rbac.authorization.k8s.io/view"}, true},
		// Not needed, not granted.
		{"no pods", []string{"create", "pods", "-n", "team-x"}, false},
		{"no deployments", []string{"create", "deployments.apps", "-n", "team-x"}, false},
		{"no deleting CRDs", []string{"delete", "customresourcedefinitions.apiextensions.k8s.io"}, false},
		{"no creating CRDs", []string{"create", "customresourcedefinitions.apiextensions.k8s.io"}, false},
		{"no changing CompositeControllers", []string{"update", "compositecontrollers.metacontroller.k8s.io"}, false},
		{"no writing ControllerRevisions", []string{"create", "controllerrevisions.metacontroller.k8s.io", "-n", "default"}, false},
		{"no deleting TeamSpaces", []string{"delete", "teamspaces.platform.labhub.io"}, false},
		{"patch TeamSpaces (granted to owners; it PUTs itself)", []string{"patch", "teamspaces.platform.labhub.io"}, true},
		{"no binding roles", []string{"bind", "clusterroles.rbac.authorization.k8s.io"}, false},
		{"no binding cluster-admin", []string{"bind", "clusterroles.rbac.authorization.k8s.io/cluster-admin"}, false},
		{"no binding edit", []string{"bind", "clusterroles.rbac.authorization.k8s.io/edit"}, false},
		{"no binding namespaced roles", []string{"bind", "roles.rbac.authorization.k8s.io", "-n", "team-x"}, false},
		{"no Roles", []string{"create", "roles.rbac.authorization.k8s.io", "-n", "team-x"}, false},
		{"no escalating ClusterRole admin", []string{"escalate", "clusterroles.rbac.authorization.k8s.io/admin"}, false},
		{"no escalating roles", []string{"escalate", "clusterroles.rbac.authorization.k8s.io"}, false},
		{"no impersonation", []string{"impersonate", "users"}, false},
		{"no minting tokens", []string{"create", "serviceaccounts", "--subresource=token", "-n", "teamspace-system"}, false},
		{"no leases (leader election off)", []string{"create", "leases.coordination.k8s.io", "-n", "teamspace-system"}, false},
		{"no nodes", []string{"get", "nodes"}, false},
	}
	// The grant namespaces.yaml asks of whoever creates a team-* namespace:
	// a virtual resource, which kubectl auth can-i cannot name (it is in no
	// discovery document), so asked as a SubjectAccessReview.
	t.Run("create team-* namespaces (virtual teamnamespaces, namespaces.yaml)", func(t *testing.T) {
		sar := `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"` + engineSA +
			`","groups":["system:serviceaccounts","system:serviceaccounts:teamspace-system"],` +
			`"resourceAttributes":{"verb":"create","group":"platform.labhub.io","resource":"teamnamespaces","name":"team-x"}}}`
		r := kubectlIn(t, []byte(sar), "create", "-o", "jsonpath={.status.allowed}", "-f", "-")
		if r.err != nil {
			t.Fatal(r)
		}
		if got := strings.TrimSpace(r.stdout); got != "true" {
			t.Errorf("the engine may not create teamnamespaces/team-x (allowed=%q): namespaces.yaml would refuse its team namespaces", got)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"auth", "can-i", "--as=" + engineSA,
				"--as-group=system:serviceaccounts", "--as-group=system:serviceaccounts:teamspace-system"}, tc.args...)
			r := kubectl(t, args...)
			got := strings.TrimSpace(r.stdout)
			if got != "yes" && got != "no" {
				t.Fatalf("kubectl %s: %v", strings.Join(args, " "), r)
			}
			if (got == "yes") != tc.want {
				t.Errorf("can %s %s: %s, want %v", engineSA, strings.Join(tc.args, " "), got, tc.want)
			}
		})
	}
}

var forbidden = regexp.MustCompile(`(?i)forbidden`)

// TestRBACSufficient installs with install.sh (SERVICE_MANAGER=none, into
// a temporary DESTDIR), so that the real engine runs with the unit file's
// command line on the credential install.sh makes, of exactly rbac.yaml's
// ServiceAccount and role, and checks a TeamSpace's whole life: namespace
// and quota appear, status and finalizer are written, deletion completes
// and is archived, and the engine was never refused anything.
func TestRBACSufficient(t *testing.T) {
	testenv.NeedEngine(t, "tests/deploy: TestRBACSufficient (the engine runs a TeamSpace's whole life on exactly rbac.yaml's grant)")
	needCluster(t)
	crds := metacontrollerCRDs(t)
	skipIfInstalled(t)
	in := newInstall(t, crds)
	const ts = "deploy-test-rbac"
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("engine log (tail):\n%s", readLog(in.destdir, "metacontroller"))
		}
		deployScript(t, in.env, "uninstall.sh")
		removeTeamSpace(t, ts)
		removeAdmissionPolicies(t)
	})
	if r := deployScript(t, in.env, "install.sh"); r.err != nil {
		t.Fatalf("install.sh: %v", r)
	}
	kc := filepath.Join(in.destdir, "etc", "teamspace", "metacontroller.kubeconfig")
	if who := kubectlOK(t, "--kubeconfig="+kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); who != engineSA {
		t.Fatalf("the engine's credential is for %q, want %s", who, engineSA)
	}
	archive := filepath.Join(in.destdir, "var", "lib", "teamspace", "archive")

	createTeamSpace(t, []byte(`{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","metadata":{"name":"`+ts+`"},"spec":{"pods":3,"cpu":"2","owners":[{"kind":"User","name":"ann"},{"kind":"ServiceAccount","name":"ci","namespace":"tools"}]}}`))

	steps := []struct {
		name    string
		timeout time.Duration
		cond    func() error
	}{
		{"namespace created", 90 * time.Second, func() error {
			if !exists(t, "namespace", "team-"+ts) {
				return fmt.Errorf("no namespace team-%s", ts)
			}
			return nil
		}},
		{"quota created with the spec's values", 30 * time.Second, func() error {
			r := kubectl(t, "-n", "team-"+ts, "get", "resourcequota", "team-quota", "-o", "jsonpath={.spec.hard.pods} {.spec.hard.requests\\.cpu}")
			if r.err != nil {
				return fmt.Errorf("%v", r)
			}
			if got := strings.TrimSpace(r.stdout); got != "3 2" {
				return fmt.Errorf("quota hard pods/cpu %q, want \"3 2\"", got)
			}
			return nil
		}},
		{"LimitRange, RoleBinding to admin, NetworkPolicy and the owners' ClusterRoleBinding created", 30 * time.Second, func() error {
			for _, ref := range [][]string{{"limitrange", "team-defaults"}, {"rolebinding", "team-owners"}, {"networkpolicy", "team-isolation"}} {
				if r := kubectl(t, "-n", "team-"+ts, "get", ref[0], ref[1]); r.err != nil {
					return fmt.Errorf("%s %s: %v", ref[0], ref[1], r)
				}
			}
			r := kubectl(t, "-n", "team-"+ts, "get", "rolebinding", "team-owners", "-o", "jsonpath={.roleRef.name} {.subjects[*].name}")
			if got := strings.TrimSpace(r.stdout); got != "admin ann ci" {
				return fmt.Errorf("RoleBinding roleRef/subjects %q, want \"admin ann ci\"", got)
			}
			// The owners' access to the TeamSpace itself (issue #27).
			r = kubectl(t, "get", "clusterrolebinding", "teamspace-owner-"+ts, "-o", "jsonpath={.roleRef.name} {.subjects[*].name}")
			if got, want := strings.TrimSpace(r.stdout), "teamspace-owner-"+ts+" ann ci"; got != want {
				return fmt.Errorf("ClusterRoleBinding roleRef/subjects %q, want %q (%v)", got, want, r.err)
			}
			return nil
		}},
		{"status written (teamspaces/status update)", 30 * time.Second, func() error {
			got := kubectlOK(t, "get", "teamspaces.platform.labhub.io", ts, "-o", "jsonpath={.metadata.generation} {.status.observedGeneration}")
			f := strings.Fields(got)
			if len(f) != 2 || f[0] != f[1] {
				return fmt.Errorf("generation/observedGeneration %q", got)
			}
			return nil
		}},
		{"finalizer added (teamspaces update)", 30 * time.Second, func() error {
			got := kubectlOK(t, "get", "teamspaces.platform.labhub.io", ts, "-o", "jsonpath={.metadata.finalizers}")
			if !strings.Contains(got, "metacontroller.io/compositecontroller-teamspace") {
				return fmt.Errorf("finalizers %q", got)
			}
			return nil
		}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) { waitFor(t, s.timeout, s.name, s.cond) })
	}

	if r := kubectl(t, "delete", "teamspaces.platform.labhub.io", ts, "--wait=false"); r.err != nil {
		t.Fatalf("deleting the TeamSpace: %v", r)
	}
	t.Run("deletion completes (finalize, finalizer removed)", func(t *testing.T) {
		waitFor(t, 120*time.Second, "the TeamSpace to be gone", func() error {
			if exists(t, "teamspaces.platform.labhub.io", ts) {
				return fmt.Errorf("TeamSpace %s still there: %s", ts, kubectl(t, "get", "teamspaces.platform.labhub.io", ts, "-o", "jsonpath={.metadata.finalizers} {.status}").stdout)
			}
			return nil
		})
	})
	t.Run("deletion archived", func(t *testing.T) {
		waitFor(t, 10*time.Second, "an archive record", func() error {
			des, err := os.ReadDir(archive)
			if err != nil {
				return err
			}
			for _, de := range des {
				if strings.Contains(de.Name(), ts) {
					return nil
				}
			}
			return fmt.Errorf("no record for %s among %d files", ts, len(des))
		})
	})
	t.Run("engine never refused", func(t *testing.T) {
		full, err := os.ReadFile(filepath.Join(in.destdir, "var", "log", "teamspace", "metacontroller.log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(full), "\n") {
			if forbidden.MatchString(line) {
				if len(line) > 600 {
					line = line[:600] + "..."
				}
				t.Errorf("engine was refused something, rbac.yaml lacks a rule: %s", line)
			}
		}
	})
}
