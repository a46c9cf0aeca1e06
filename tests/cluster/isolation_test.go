package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// TestIsolationHeld (issue #40): in a team namespace whose TeamSpace asks
// for isolation, an owner (admin there) may not reopen it with a
// NetworkPolicy of their own that admits ingress from outside the
// namespace (before, an allow-all policy beside team-isolation did, with
// allowNetworkIsolationOff "false"); policies within the namespace, from
// the team's namespaces by name (issue #52) and egress rules stay allowed. In a namespace the platform left open
// (networkIsolation: false) the owner's policies are theirs.
func TestIsolationHeld(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	sfx := suffix(t, 6)
	owner := "owner-" + sfx
	isolated, open := "iso-"+sfx, "open-"+sfx
	owners := []any{map[string]any{"kind": "User", "name": owner}}
	createOwned(t, isolated, with(within(), "owners", owners))
	createOwned(t, open, with(within(), "owners", owners, "networkIsolation", false))
	policy := func(name, ingress string) string {
		var in any
		if err := json.Unmarshal([]byte(ingress), &in); err != nil {
			t.Fatal(err)
		}
		spec := map[string]any{"podSelector": map[string]any{}, "policyTypes": []string{"Ingress"}}
		if in != nil {
			spec["ingress"] = in
		}
		b, _ := json.Marshal(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
			"metadata": map[string]any{"name": name}, "spec": spec})
		return string(b)
	}
	outside := map[string]string{
		"allow all":                    `[{}]`,
		"a rule with an empty from":    `[{"from":[]}]`,
		"every namespace":              `[{"from":[{"namespaceSelector":{}}]}]`,
		"pods of every namespace":      `[{"from":[{"podSelector":{},"namespaceSelector":{}}]}]`,
		"another team's namespace":     `[{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"team-x"}}}]}]`,
		"an ipBlock":                   `[{"from":[{"ipBlock":{"cidr":"0.0.0.0/0"}}]}]`,
		"inside, then outside":         `[{"from":[{"podSelector":{}}]},{"ports":[{"port":80}]}]`,
		"a peer inside and one beyond": `[{"from":[{"podSelector":{"matchLabels":{"app":"a"}}},{"ipBlock":{"cidr":"10.0.0.0/8"}}]}]`,
	}
	inside := map[string]string{
		"pods of the namespace":      `[{"from":[{"podSelector":{}}]}]`,
		"some pods of the namespace": `[{"from":[{"podSelector":{"matchLabels":{"app":"web"}}}],"ports":[{"port":8080}]}]`,
		"no ingress at all (deny)":   `null`,
		"no rules (an empty list)":   `[]`,
	}
	nsOf := teamspace.NamespaceName
	// The team's own namespaces (issue #52), by the name label the API
	// server sets, and what only looks like them.
	byName := func(op string, values ...string) string {
		b, _ := json.Marshal(values)
		return `[{"from":[{"namespaceSelector":{"matchExpressions":[{"key":"kubernetes.io/metadata.name","operator":"` + op + `","values":` + string(b) + `}]}}]}]`
	}
	team, entry := nsOf(isolated), teamspace.ExtraNamespaceName(isolated, "dev")
	inside["the team's namespaces by name"] = byName("In", team, entry)
	inside["an entry's namespace by matchLabels"] = `[{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + entry + `"}},"podSelector":{"matchLabels":{"app":"a"}}}]}]`
	inside["the team's namespace and a label more"] = `[{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"` + team + `","x":"y"}}}]}]`
	outside["a name that only begins like the team's"] = byName("In", team+"-evil")
	outside["the team's and another's"] = byName("In", entry, "team-x")
	outside["every namespace but the team's"] = byName("NotIn", team)
	outside["the team's label, which a namespace's creator can set"] = `[{"from":[{"namespaceSelector":{"matchLabels":{"platform.labhub.io/teamspace":"` + isolated + `"}}}]}]`
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		_, err := kubectl(t, policy("probe", `[{}]`), append(as(owner), "-n", nsOf(isolated), "create", "--dry-run=server", "-f", "-")...)
		return err != nil && strings.Contains(err.Error(), "teamspace-isolation")
	}) {
		t.Fatal("namespaces.yaml's teamspace-isolation does not refuse an owner's allow-all policy 10s after it was applied")
	}
	for what, ingress := range outside {
		_, err := kubectl(t, policy("mine", ingress), append(as(owner), "-n", nsOf(isolated), "create", "--dry-run=server", "-f", "-")...)
		if err == nil || !strings.Contains(err.Error(), "admits traffic from outside the namespace") || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Errorf("the owner's policy admitting %s in isolated %s: %v, want one line refusing it", what, nsOf(isolated), err)
		}
		if _, err := kubectl(t, policy("mine", ingress), append(as(owner), "-n", nsOf(open), "create", "--dry-run=server", "-f", "-")...); err != nil {
			t.Errorf("the owner's policy admitting %s in open %s: %v, want allowed", what, nsOf(open), err)
		}
	}
	for what, ingress := range inside {
		if _, err := kubectl(t, policy("mine", ingress), append(as(owner), "-n", nsOf(isolated), "create", "--dry-run=server", "-f", "-")...); err != nil {
			t.Errorf("the owner's policy admitting %s in isolated %s: %v, want allowed", what, nsOf(isolated), err)
		}
	}
	// Reopening team-isolation itself is refused too (the engine would
	// revert it; the owner may not write it at all): by this policy or by
	// teamspace-children (the platform's children), whichever the API
	// server asks first.
	_, err := kubectl(t, "", append(as(owner), "-n", nsOf(isolated), "patch", "networkpolicy", teamspace.NetworkPolicyName, "--type=merge", "-p", `{"spec":{"ingress":[{}]}}`, "--dry-run=server")...)
	if err == nil || !strings.Contains(err.Error(), "admits traffic from outside the namespace") && !strings.Contains(err.Error(), "carries label platform.labhub.io/teamspace") {
		t.Errorf("the owner opening team-isolation: %v, want refused", err)
	}
	// The engine and the platform (system:masters) are not held.
	if _, err := kubectl(t, policy("platform", `[{}]`), "-n", nsOf(isolated), "create", "--dry-run=server", "-f", "-"); err != nil {
		t.Errorf("the admin's allow-all policy: %v, want allowed", err)
	}
	if got := mustKubectl(t, "", "get", "namespace", nsOf(isolated), "-o", "jsonpath={.metadata.labels.platform\\.labhub\\.io/network-isolation}"); got != "true" {
		t.Errorf("isolated namespace's %s label = %q, want true", v1alpha1.NetworkIsolationLabel, got)
	}
	if got := mustKubectl(t, "", "get", "namespace", nsOf(open), "-o", "jsonpath={.metadata.labels.platform\\.labhub\\.io/network-isolation}"); got != "" {
		t.Errorf("open namespace's %s label = %q, want none", v1alpha1.NetworkIsolationLabel, got)
	}
}
