package cluster_test

import (
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/testenv"
)

// The team- prefix is reserved (hack/deploy/namespaces.yaml, issue #25):
// only the engine's identity, system:masters and holders of ClusterRole
// teamspace-team-namespaces create a namespace named team-*.

// installNamespacesPolicy applies the engine's RBAC, the roles and
// namespaces.yaml and waits until a squatter (a user who may create
// namespaces) is refused team-*. It stays installed, like the CRD.
func installNamespacesPolicy(t *testing.T) (squatter string) {
	t.Helper()
	installCRD(t)
	role := "ts-test-namespace-creator"
	testenv.Setup(t, "namespaces", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "rbac.yaml"), "-f", deployFile(t, "roles.yaml"), "-f", deployFile(t, "namespaces.yaml"))
		if _, err := kubectl(t, "", "get", "clusterrole", role); err != nil {
			mustKubectl(t, "", "create", "clusterrole", role, "--verb=create,get,delete", "--resource=namespaces")
		}
	})
	squatter = "squatter-" + suffix(t, 6)
	bindRole(t, role, "User", squatter)
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err := createNamespace(t, as(squatter), "team-probe", true)
		return err != nil && strings.Contains(err.Error(), "teamspace-namespaces")
	}) {
		t.Fatalf("a squatter's team-probe is not refused 10s after applying namespaces.yaml: %v", createNamespace(t, as(squatter), "team-probe", true))
	}
	return squatter
}

// createNamespace creates namespace name as who (a server dry run if
// dryRun); a real one is deleted when the test ends.
func createNamespace(t *testing.T, who []string, name string, dryRun bool) error {
	t.Helper()
	args := append(append([]string{}, who...), "create", "namespace", name)
	if dryRun {
		args = append(args, "--dry-run=server")
	} else {
		deleteOnCleanup(t, "namespace", name)
	}
	_, err := kubectl(t, "", args...)
	return err
}

// TestTeamPrefixReserved: a user who may create namespaces cannot create
// team-*, with a message that says to create a TeamSpace; other names are
// untouched; the engine's identity, system:masters and a restorer holding
// teamspace-team-namespaces can; an engine identity without the grant
// (a wrong one) is refused and what exists stays as it is.
func TestTeamPrefixReserved(t *testing.T) {
	parallel(t)
	squatter := installNamespacesPolicy(t)
	s := suffix(t, 6)

	err := createNamespace(t, as(squatter), "team-bob"+s, false)
	if err == nil {
		t.Fatal("a squatter created team-bob" + s)
	}
	for _, want := range []string{"ValidatingAdmissionPolicy 'teamspace-namespaces'", "namespace team-bob" + s + ": names beginning with team- belong to TeamSpaces",
		"create TeamSpace bob" + s + " instead", "Only the TeamSpace engine creates team-* namespaces"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal lacks %q: %v", want, err)
		}
	}
	if err := createNamespace(t, as(squatter), "teamx-"+s, false); err != nil {
		t.Errorf("a namespace not named team-*: %v, want created", err)
	}
	if err := createNamespace(t, as(engineIdentity), "team-eng-"+s, false); err != nil {
		t.Errorf("the engine's identity creating team-eng-%s: %v", s, err)
	}
	if err := createNamespace(t, nil, "team-adm-"+s, false); err != nil {
		t.Errorf("system:masters creating team-adm-%s: %v", s, err)
	}
	restorer := "restorer-" + s
	bindRole(t, "ts-test-namespace-creator", "User", restorer)
	bindRole(t, "teamspace-team-namespaces", "User", restorer)
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		return createNamespace(t, as(restorer), "team-rst-"+s, true) == nil
	}) {
		t.Errorf("a restorer holding teamspace-team-namespaces: %v", createNamespace(t, as(restorer), "team-rst-"+s, true))
	}

	// A wrong engine identity: may create namespaces (as the engine's role
	// allows) but lacks the teamnamespaces grant.
	wrong := "system:serviceaccount:teamspace-system:not-the-engine"
	bindRole(t, "ts-test-namespace-creator", "User", wrong)
	err = createNamespace(t, as(wrong), "team-eng-"+s+"x", false)
	if err == nil || !strings.Contains(err.Error(), "teamspace-namespaces") {
		t.Errorf("a wrong engine identity creating a team namespace: %v, want refused", err)
	}
	// Nothing that exists is touched: the engine's namespace stays, and the
	// squatter may still delete only what RBAC lets it (deletes are not
	// matched).
	if _, found := getObject(t, "namespace", "team-eng-"+s); !found {
		t.Error("team-eng-" + s + " is gone after the refusals")
	}
}
