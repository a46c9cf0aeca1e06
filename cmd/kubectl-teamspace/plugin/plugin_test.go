package plugin

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	goldenfile "github.com/labhub/teamspace/tests/golden"
)

// golden compares got with testdata/name (-update rewrites it).
func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenfile.CompareText(t, filepath.Join("testdata", name), got)
}

func TestTeamSpaceRights(t *testing.T) {
	rule := func(groups, resources, verbs, names []string) authorizationv1.ResourceRule {
		return authorizationv1.ResourceRule{APIGroups: groups, Resources: resources, Verbs: verbs, ResourceNames: names}
	}
	ts := []string{"platform.labhub.io"}
	cases := []struct {
		name  string
		rules []authorizationv1.ResourceRule
		want  rights
	}{
		{name: "no rules", want: rights{}},
		{name: "an owner of two (teamspace-owner-<name>)", rules: []authorizationv1.ResourceRule{
			rule(ts, []string{"teamspaces"}, []string{"get", "watch", "update", "patch"}, []string{"beta"}),
			rule(ts, []string{"teamspaces"}, []string{"get", "watch", "update", "patch"}, []string{"alpha"}),
		}, want: rights{names: []string{"alpha", "beta"}}},
		{name: "a requester (list)", rules: []authorizationv1.ResourceRule{rule(ts, []string{"teamspaces"}, []string{"get", "list", "watch", "create"}, nil)}, want: rights{canList: true}},
		{name: "an admin (wildcards)", rules: []authorizationv1.ResourceRule{rule([]string{"*"}, []string{"*"}, []string{"*"}, nil)}, want: rights{canList: true}},
		{name: "another group's resource", rules: []authorizationv1.ResourceRule{rule([]string{"apps"}, []string{"teamspaces"}, []string{"get"}, []string{"x"})}, want: rights{}},
		{name: "status only", rules: []authorizationv1.ResourceRule{rule(ts, []string{"teamspaces/status"}, []string{"get"}, []string{"x"})}, want: rights{}},
		{name: "watch by name only", rules: []authorizationv1.ResourceRule{rule(ts, []string{"teamspaces"}, []string{"watch"}, []string{"x"})}, want: rights{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, teamSpaceRights(c.rules), cmp.AllowUnexported(rights{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestPrintMine: what `mine` prints, in each output form.
func TestPrintMine(t *testing.T) {
	m := &Mine{User: "ann", TeamSpaces: []MineRow{
		{Name: "alpha", Roles: []string{"owner", "requester"}, Ready: "True Ready", Namespaces: []string{"team-alpha", "team-alpha--dev"}, Pods: "10"},
		{Name: "beta", Roles: []string{"owner"}, Ready: "False QuotaPending", Namespaces: []string{"team-beta"}, Pods: "4"},
		{Name: "gamma", Roles: []string{"owner"}, Unreadable: `teamspaces.platform.labhub.io "gamma" is forbidden`},
	}, Note: "without the right to list TeamSpaces, only those whose owners name me (or a group of mine) are found, not those I requested"}
	for _, output := range []string{"table", "json", "yaml"} {
		var b bytes.Buffer
		if err := printMine(m, output, &b); err != nil {
			t.Fatal(err)
		}
		golden(t, "mine."+output, b.String())
	}
	var b bytes.Buffer
	if err := printMine(&Mine{User: "stranger", TeamSpaces: []MineRow{}}, "table", &b); err != nil {
		t.Fatal(err)
	}
	golden(t, "mine-none.table", b.String())
}

// TestRunBadInput: a usage error or an unreachable API server is one line
// naming the problem and a non-zero exit.
func TestRunBadInput(t *testing.T) {
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no command", args: nil, code: 2},
		{name: "unknown command", args: []string{"frobnicate"}, code: 2, want: `error: unknown command "frobnicate" (kubectl teamspace --help)`},
		{name: "mine with an argument", args: []string{"mine", "x"}, code: 2, want: "error: mine takes no arguments"},
		{name: "bad output", args: []string{"-o", "wide", "mine"}, code: 2, want: `error: --output "wide": want table, json or yaml`},
		{name: "show without a name", args: []string{"show"}, code: 2, want: "error: show takes one TeamSpace name"},
		{name: "allowance with an argument", args: []string{"allowance", "x"}, code: 2, want: "error: allowance takes no arguments"},
		{name: "unknown flag", args: []string{"--frob", "mine"}, code: 2, want: "error: unknown flag: --frob"},
		{name: "no such kubeconfig", args: []string{"--kubeconfig", "/nonexistent/kubeconfig", "mine"}, code: 1, want: "error: no cluster to talk to"},
		{name: "unreachable API server", args: []string{"--server", "https://127.0.0.1:1", "--insecure-skip-tls-verify", "--request-timeout", "2s", "mine"}, code: 1, want: "error: who am I (SelfSubjectReview)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Run(context.Background(), c.args, &out, &errOut)
			if code != c.code {
				t.Errorf("exit code %d, want %d (stderr %q)", code, c.code, errOut.String())
			}
			got := errOut.String()
			if c.want != "" && (!strings.HasPrefix(got, c.want) || strings.Count(got, "\n") != 1) {
				t.Errorf("stderr %q, want one line starting %q", got, c.want)
			}
		})
	}
}

func TestBar(t *testing.T) {
	cases := []struct{ name, used, hard, want string }{
		{"empty", "0", "4", "[..........]"},
		{"half", "2", "4", "[#####.....]"},
		{"full", "4", "4", "[##########]"},
		{"over (a share lowered)", "6", "4", "[##########]"},
		{"quantities", "250m", "1", "[###.......]"},
		{"memory", "512Mi", "1Gi", "[#####.....]"},
		{"unknown use", "-", "4", "[??????????]"},
		{"no limit", "1", "0", "[??????????]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := bar(c.used, c.hard, 10); got != c.want {
				t.Errorf("bar(%s, %s) = %s, want %s", c.used, c.hard, got, c.want)
			}
		})
	}
}

// TestMeaning: every Ready reason the hook gives is said in plain words.
func TestMeaning(t *testing.T) {
	for _, reason := range []string{"ArchivePending", "ChildRemoving", "ClusterRoleBindingOutOfDate", "ClusterRoleBindingPending",
		"ClusterRoleConflict", "ClusterRoleOutOfDate", "ClusterRolePending", "Creating", "Deleting", "InvalidSpec",
		"LimitRangeOutOfDate", "LimitRangePending", "LimitsInvalid", "NamespaceConflict", "NamespaceKept", "NamespaceNotActive",
		"NamespaceOutOfDate", "NamespacePending", "NamespaceRemoving", "NamespaceTerminating", "NetworkPolicyOutOfDate",
		"NetworkPolicyPending", "OwnerReserved", "QuotaOutOfDate", "QuotaPending", "Ready", "RequesterAllowanceExceeded",
		"RoleBindingOutOfDate", "RoleBindingPending", ""} {
		if m := meaning(reason); m == "see the message" || m == "" {
			t.Errorf("reason %q: %q, want plain words", reason, m)
		}
	}
}

// TestPrintShow: what `show` prints, in each output form.
func TestPrintShow(t *testing.T) {
	s := &Show{Name: "alpha", RequestedBy: "bob", Owners: []string{"User ann", "Group alpha-devs", "ServiceAccount tools/ci"},
		Ready: "False NamespaceKept", Meaning: meaning("NamespaceKept"),
		Message: "namespace team-alpha--old is no longer in spec.namespaces; it is kept with everything in it",
		Namespaces: []NamespaceUse{
			{Name: "team-alpha", State: "Active", Source: "live", Resources: []Resource{{"pods", "3", "4"}, {"requests.cpu", "250m", "1"}, {"requests.memory", "512Mi", "1Gi"}}},
			{Name: "team-alpha--old", State: "Kept", Source: "status", Resources: []Resource{{"pods", "-", "2"}}},
			// Not readable, and a current status keeps no figures.
			{Name: "team-alpha--dev", State: "Active", Source: "status"},
		}}
	for _, output := range []string{"table", "json", "yaml"} {
		var b bytes.Buffer
		if err := printShow(s, output, &b); err != nil {
			t.Fatal(err)
		}
		golden(t, "show."+output, b.String())
	}
}

// TestPrintAllowance: what `allowance` prints, in each output form, and
// when neither part can be known.
func TestPrintAllowance(t *testing.T) {
	held := &Totals{TeamSpaces: "2", Pods: "6", CPU: "1500m", Memory: "3Gi"}
	allowed := &Totals{TeamSpaces: "3", Pods: "20", CPU: "8", Memory: ""}
	a := &Allowance{User: "alice", Held: held, Allowed: allowed, Left: left(allowed, held),
		Limits: map[string]string{"maxPods": "10", "maxCPU": "4", "podSecurityLevels": "baseline,restricted"}}
	for _, output := range []string{"table", "json", "yaml"} {
		var b bytes.Buffer
		if err := printAllowance(a, output, &b); err != nil {
			t.Fatal(err)
		}
		golden(t, "allowance."+output, b.String())
	}
	var b bytes.Buffer
	if err := printAllowance(&Allowance{User: "stranger", Unknown: []string{"the platform's limits: I may not read ConfigMap teamspace-system/teamspace-limits", "what I hold: I may not list TeamSpaces"}}, "table", &b); err != nil {
		t.Fatal(err)
	}
	golden(t, "allowance-unknown.table", b.String())
}

func TestLeft(t *testing.T) {
	got := left(&Totals{TeamSpaces: "3", Pods: "20", CPU: "8", Memory: ""}, &Totals{TeamSpaces: "4", Pods: "6", CPU: "1500m", Memory: "3Gi"})
	want := &Totals{TeamSpaces: "0", Pods: "14", CPU: "6500m", Memory: ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestOwnedBy: the owners a user is among, as bound: a reserved owner
// (bound nowhere) makes nobody an owner, though every user is in
// system:authenticated.
func TestOwnedBy(t *testing.T) {
	ts := func(owners ...map[string]any) *unstructured.Unstructured {
		list := []any{}
		for _, o := range owners {
			list = append(list, o)
		}
		return &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"owners": list}}}
	}
	groups := []string{"devs", "system:authenticated"}
	for _, c := range []struct {
		name  string
		ts    *unstructured.Unstructured
		user  string
		owner bool
	}{
		{"user", ts(map[string]any{"kind": "User", "name": "ann"}), "ann", true},
		{"another user", ts(map[string]any{"kind": "User", "name": "bob"}), "ann", false},
		{"group", ts(map[string]any{"kind": "Group", "name": "devs"}), "ann", true},
		{"system:authenticated", ts(map[string]any{"kind": "Group", "name": "system:authenticated"}), "ann", false},
		{"service account", ts(map[string]any{"kind": "ServiceAccount", "namespace": "ci", "name": "deploy"}), "system:serviceaccount:ci:deploy", true},
		{"kube-system service account", ts(map[string]any{"kind": "ServiceAccount", "namespace": "kube-system", "name": "deploy"}), "system:serviceaccount:kube-system:deploy", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ownedBy(c.ts, c.user, groups); got != c.owner {
				t.Errorf("ownedBy %s = %v, want %v", c.user, got, c.owner)
			}
		})
	}
}
