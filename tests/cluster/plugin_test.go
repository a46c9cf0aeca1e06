package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/cmd/kubectl-teamspace/plugin"
	"github.com/labhub/teamspace/tests/golden"
)

// pluginGolden compares what the plugin printed, with the test's random
// suffix s replaced by "S", with testdata/plugin/name (-update rewrites
// it): the output a user sees, on the real API server.
func pluginGolden(t *testing.T, name, s, got string) {
	t.Helper()
	got = strings.ReplaceAll(got, s, "S")
	golden.CompareText(t, filepath.Join("testdata", "plugin", name), got)
}

// runPlugin runs `kubectl teamspace` in this process with args, against
// the test control plane (KUBECONFIG), as kubectl would run it.
func runPlugin(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = plugin.Run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// TestPluginMine (issue #54, item 1): `kubectl teamspace mine` with the
// rights the shipped roles give, through impersonation. An owner, who may
// get only its own TeamSpace by name, finds it (and says what it cannot
// find: those it requested); a requester, who may list them, finds the
// one it asked for and not another's; a stranger finds none.
func TestPluginMine(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	s, requester := limitsCast(t, "mine")
	owner, stranger := "owner-"+s, "stranger-"+s
	owned, requested := "mine-"+s, "asked-"+s
	createOwned(t, owned, ownedBy(within(), owner))
	createOwnedAs(t, as(requester), requested, within())

	mine := func(user string) plugin.Mine {
		t.Helper()
		out, errOut, code := runPlugin(t, "--as", user, "-o", "json", "mine")
		if code != 0 {
			t.Fatalf("as %s: exit %d: %s", user, code, errOut)
		}
		var m plugin.Mine
		if err := json.Unmarshal([]byte(out), &m); err != nil {
			t.Fatalf("as %s: %v\n%s", user, err, out)
		}
		return m
	}
	names := func(m plugin.Mine) string {
		var out []string
		for _, r := range m.TeamSpaces {
			out = append(out, r.Name+":"+strings.Join(r.Roles, ","))
		}
		return strings.Join(out, " ")
	}
	if m := mine(owner); names(m) != owned+":owner" || m.User != owner || !strings.Contains(m.Note, "not those I requested") {
		t.Errorf("as the owner: %s, user %q, note %q; want %s:owner and a note on what it cannot find", names(m), m.User, m.Note, owned)
	} else if r := m.TeamSpaces[0]; len(r.Namespaces) > 0 && r.Namespaces[0] != "team-"+owned {
		t.Errorf("as the owner: namespaces %v", r.Namespaces)
	}
	if m := mine(requester); names(m) != requested+":requester" || m.Note != "" {
		t.Errorf("as the requester: %s, note %q; want %s:requester and no note (it may list)", names(m), m.Note, requested)
	}
	if m := mine(stranger); names(m) != "" {
		t.Errorf("as a stranger: %s, want none", names(m))
	}
	out, _, code := runPlugin(t, "--as", stranger, "mine")
	if code != 0 || !strings.HasPrefix(out, "No TeamSpace is "+stranger+"'s.\n") {
		t.Errorf("as a stranger, the table: exit %d, %q", code, out)
	}
	out, _, _ = runPlugin(t, "--as", owner, "mine")
	if lines := strings.Split(out, "\n"); len(lines) < 2 || !strings.HasPrefix(lines[0], "NAME") || !strings.HasPrefix(lines[1], owned+" ") {
		t.Errorf("as the owner, the table:\n%s", out)
	}
	pluginGolden(t, "mine-owner.txt", s, out)
	out, _, _ = runPlugin(t, "--as", requester, "mine")
	pluginGolden(t, "mine-requester.txt", s, out)
	out, _, _ = runPlugin(t, "--as", stranger, "mine")
	pluginGolden(t, "mine-stranger.txt", s, out)
}

// TestPluginShow (issue #54, item 1): `kubectl teamspace show NAME` with
// the shipped roles, through impersonation. The owner sees its owners,
// requester and each namespace's quota read live (it is admin there);
// the requester, who may read the TeamSpace but not the quota, sees what
// it may and is told; a stranger is told the TeamSpace is not theirs to
// read, in one line with a non-zero exit, as is a name that exists
// nowhere.
func TestPluginShow(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	s, requester := limitsCast(t, "show")
	owner, stranger := "owner-"+s, "stranger-"+s
	name := "shown-" + s
	createOwnedAs(t, as(requester), name, ownedBy(within(), owner))

	show := func(user string) plugin.Show {
		t.Helper()
		out, errOut, code := runPlugin(t, "--as", user, "-o", "json", "show", name)
		if code != 0 {
			t.Fatalf("as %s: exit %d: %s", user, code, errOut)
		}
		var v plugin.Show
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatalf("as %s: %v\n%s", user, err, out)
		}
		return v
	}
	v := show(owner)
	if v.RequestedBy != requester || strings.Join(v.Owners, ",") != "User "+owner || v.Meaning == "" {
		t.Errorf("as the owner: requested by %q, owners %v, meaning %q", v.RequestedBy, v.Owners, v.Meaning)
	}
	if len(v.Namespaces) != 1 || v.Namespaces[0].Name != "team-"+name || v.Namespaces[0].Source != "live" ||
		len(v.Namespaces[0].Resources) == 0 || v.Namespaces[0].Resources[0].Name != "pods" || v.Namespaces[0].Resources[0].Hard != "2" {
		t.Errorf("as the owner: namespaces %+v, want team-%s's quota read live, pods of 2", v.Namespaces, name)
	}
	if v := show(requester); len(v.Namespaces) != 0 && v.Namespaces[0].Source == "live" {
		t.Errorf("as the requester: %+v, want no quota read live (it is not in the namespace)", v.Namespaces)
	}
	// The quota's figures come once the quota controller has counted.
	var out string
	if !eventually(20*time.Second, 200*time.Millisecond, func() bool {
		out, _, _ = runPlugin(t, "--as", owner, "show", name)
		return strings.Contains(out, "  requests.memory ")
	}) {
		t.Errorf("as the owner, the table:\n%s", out)
	}
	pluginGolden(t, "show-owner.txt", s, out)
	out, _, _ = runPlugin(t, "--as", requester, "show", name)
	pluginGolden(t, "show-requester.txt", s, out)
	for who, target := range map[string]string{stranger: name, owner: "nowhere-" + s} {
		_, errOut, code := runPlugin(t, "--as", who, "show", target)
		if code != 1 || !strings.HasPrefix(errOut, "error: TeamSpace "+target+" ") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("as %s, show %s: exit %d, %q; want one line saying it is not theirs or does not exist", who, target, code, errOut)
		}
	}
}

// TestPluginAllowance (issue #54, item 1): `kubectl teamspace allowance`
// as a requester holding one TeamSpace: what it holds against the shipped
// allowance (3 TeamSpaces, 20 pods, 8 cpu, 16Gi), and, once the platform
// binds teamspace-limits-reader in teamspace-system, the limits of one
// TeamSpace; before that it says it cannot read them. A stranger can know
// neither, and is told why.
func TestPluginAllowance(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	s, requester := limitsCast(t, "allow")
	stranger := "stranger-" + s
	createOwnedAs(t, as(requester), "held-"+s, within())
	allowance := func(user string) plugin.Allowance {
		t.Helper()
		out, errOut, code := runPlugin(t, "--as", user, "-o", "json", "allowance")
		if code != 0 {
			t.Fatalf("as %s: exit %d: %s", user, code, errOut)
		}
		var a plugin.Allowance
		if err := json.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("as %s: %v\n%s", user, err, out)
		}
		return a
	}
	a := allowance(requester)
	if a.Held == nil || *a.Held != (plugin.Totals{TeamSpaces: "1", Pods: "2", CPU: "500m", Memory: "1Gi"}) {
		t.Errorf("as the requester: held %+v, want its one TeamSpace (2 pods, 500m, 1Gi)", a.Held)
	}
	if len(a.Unknown) != 1 || !strings.Contains(a.Unknown[0], "teamspace-limits-reader") || a.Left != nil {
		t.Errorf("as the requester without the limits: unknown %v, left %+v; want the limits unknown, naming the role", a.Unknown, a.Left)
	}
	out, _, _ := runPlugin(t, "--as", requester, "allowance")
	pluginGolden(t, "allowance-requester-no-limits.txt", s, out)
	binding := "limits-readers-" + s
	mustKubectl(t, "", "-n", "teamspace-system", "create", "rolebinding", binding, "--clusterrole=teamspace-limits-reader", "--user="+requester)
	deleteOnCleanup(t, "-n", "teamspace-system", "rolebinding", binding)
	out, _, _ = runPlugin(t, "--as", stranger, "allowance")
	pluginGolden(t, "allowance-stranger.txt", s, out)
	a = allowance(requester)
	if a.Left == nil || *a.Left != (plugin.Totals{TeamSpaces: "2", Pods: "18", CPU: "7500m", Memory: "15Gi"}) || a.Limits["maxPods"] != "10" || len(a.Unknown) != 0 {
		t.Errorf("as the requester with the limits: left %+v, limits %v, unknown %v; want 2 TeamSpaces, 18 pods, 7500m, 15Gi left and maxPods 10", a.Left, a.Limits, a.Unknown)
	}
	out, _, _ = runPlugin(t, "--as", requester, "allowance")
	pluginGolden(t, "allowance-requester.txt", s, out)
	if a := allowance(stranger); a.Held != nil || len(a.Unknown) != 2 {
		t.Errorf("as a stranger: held %+v, unknown %v; want both unknown, said why", a.Held, a.Unknown)
	}
}
