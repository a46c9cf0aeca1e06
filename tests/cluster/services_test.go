package cluster_test

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

// serviceJSON is a Service of the given type (and external IPs), one port.
func serviceJSON(name, typ string, externalIPs ...string) string {
	spec := map[string]any{"ports": []any{map[string]any{"port": 80}}}
	if typ != "" {
		spec["type"] = typ
	}
	if typ == "ExternalName" {
		spec = map[string]any{"type": typ, "externalName": "example.com"}
	}
	if len(externalIPs) > 0 {
		spec["externalIPs"] = externalIPs
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": name}, "spec": spec})
	return string(b)
}

// TestServicesStayInside (issue #41, item 1): in a team namespace, its
// owner (admin there) cannot make a Service that reaches past it: external
// IPs (CVE-2020-8554) never, NodePort, LoadBalancer and ExternalName only
// while the platform's limits allow each; a ClusterIP or headless Service
// is theirs. The platform team (system:masters, exemptGroups) is not held;
// a namespace that is not a team's is not either. An update is held only
// in what it changes, so a Service admitted before the platform tightened
// an option stays and can be labelled. A broken option refuses its type,
// naming the key.
func TestServicesStayInside(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "svc")
	owner, ns, other, platform := c.owner, c.ns, c.other, c.platform
	create := func(who []string, namespace, manifest string) error { return dryRunCreate(t, who, namespace, manifest) }
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err := create(as(owner), ns, serviceJSON("probe", "NodePort"))
		return err != nil && strings.Contains(err.Error(), "teamspace-services")
	}) {
		t.Fatal("namespaces.yaml's teamspace-services does not refuse an owner's NodePort Service 10s after it was applied")
	}
	refused := []struct{ what, manifest, want string }{
		{"external IPs (CVE-2020-8554)", serviceJSON("web", "", "10.96.0.1"), "spec.externalIPs 10.96.0.1 is not allowed in a team namespace"},
		{"external IPs on a NodePort", serviceJSON("web", "NodePort", "192.0.2.1"), "CVE-2020-8554"},
		{"NodePort", serviceJSON("web", "NodePort"), `type NodePort is not allowed in a team namespace (it opens a port on every node); key allowNodePorts of ConfigMap teamspace-system/teamspace-limits is "false"`},
		{"LoadBalancer", serviceJSON("web", "LoadBalancer"), "type LoadBalancer is not allowed"},
		{"ExternalName", serviceJSON("web", "ExternalName"), "type ExternalName is not allowed"},
	}
	for _, c := range refused {
		t.Run("refused: "+c.what, func(t *testing.T) {
			err := create(as(owner), ns, c.manifest)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "Service "+ns+"/web") || strings.Contains(withoutWarnings(err.Error()), "\n") {
				t.Errorf("the owner's %s Service: %v, want one line saying %q", c.what, err, c.want)
			}
			wantAccepted(t, "the platform team's", create(platform, ns, c.manifest))
			wantAccepted(t, "system:masters'", create(nil, ns, c.manifest))
			wantAccepted(t, "the owner's, in a namespace that is no team's", create(as(owner), other, c.manifest))
		})
	}
	t.Run("admitted: ClusterIP and headless", func(t *testing.T) {
		wantAccepted(t, "ClusterIP", create(as(owner), ns, serviceJSON("web", "")))
		wantAccepted(t, "ClusterIP named", create(as(owner), ns, serviceJSON("web", "ClusterIP")))
		headless := strings.Replace(serviceJSON("db", ""), `"ports"`, `"clusterIP":"None","ports"`, 1)
		wantAccepted(t, "headless", create(as(owner), ns, headless))
	})

	t.Run("updates: held in what they change", func(t *testing.T) {
		// The platform team's NodePort Service, which the owner may label.
		if _, err := kubectl(t, serviceJSON("legacy", "NodePort"), append(platform, "-n", ns, "create", "-f", "-")...); err != nil {
			t.Fatal(err)
		}
		_, err := kubectl(t, "", append(as(owner), "-n", ns, "label", "service", "legacy", "tier=web")...)
		wantAccepted(t, "labelling an existing NodePort Service", err)
		_, err = kubectl(t, "", append(as(owner), "-n", ns, "patch", "service", "legacy", "--type=merge", "-p", `{"spec":{"externalIPs":["10.96.0.10"]}}`)...)
		if err == nil || !strings.Contains(err.Error(), "CVE-2020-8554") {
			t.Errorf("adding an external IP to it: %v, want refused", err)
		}
		if _, err := kubectl(t, serviceJSON("mine", ""), append(as(owner), "-n", ns, "create", "-f", "-")...); err != nil {
			t.Fatal(err)
		}
		_, err = kubectl(t, "", append(as(owner), "-n", ns, "patch", "service", "mine", "--type=merge", "-p", `{"spec":{"type":"NodePort"}}`)...)
		if err == nil || !strings.Contains(err.Error(), "type NodePort is not allowed") {
			t.Errorf("turning a ClusterIP Service into a NodePort: %v, want refused", err)
		}
	})
}

// TestServicesOptions: with allowNodePorts "true" the owner's NodePort
// Service is admitted, still not a LoadBalancer nor external IPs; with a
// value that is not "true" or "false", every NodePort of the owner is
// refused naming the key, a ClusterIP Service and the platform team's
// NodePort are not.
func TestServicesOptions(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "svc")
	owner, ns, platform := c.owner, c.ns, c.platform
	create := func(who []string, namespace, manifest string) error { return dryRunCreate(t, who, namespace, manifest) }
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "allowNodePorts", "true")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { return create(as(owner), ns, serviceJSON("web", "NodePort")) == nil }) {
		t.Fatalf("allowNodePorts \"true\": the owner's NodePort Service is still refused: %v", create(as(owner), ns, serviceJSON("web", "NodePort")))
	}
	if err := create(as(owner), ns, serviceJSON("web", "LoadBalancer")); err == nil {
		t.Error("allowNodePorts alone admits a LoadBalancer")
	}
	if err := create(as(owner), ns, serviceJSON("web", "NodePort", "10.96.0.1")); err == nil || !strings.Contains(err.Error(), "CVE-2020-8554") {
		t.Errorf("allowNodePorts admits external IPs: %v", err)
	}
	setLimit(t, "allowNodePorts", "yes")
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = create(as(owner), ns, serviceJSON("web", "NodePort"))
		return err != nil && strings.Contains(err.Error(), `key allowNodePorts of ConfigMap teamspace-system/teamspace-limits is "yes", not "true" or "false"`)
	}) {
		t.Errorf("allowNodePorts \"yes\": %v, want the NodePort refused naming the key", err)
	}
	wantAccepted(t, "a ClusterIP Service while allowNodePorts is broken", create(as(owner), ns, serviceJSON("web", "")))
	wantAccepted(t, "the platform team's NodePort while allowNodePorts is broken", create(platform, ns, serviceJSON("web", "NodePort")))
}

// withoutWarnings is kubectl's error output without the warnings the API
// server adds on lines of their own (spec.externalIPs is deprecated),
// trimmed.
func withoutWarnings(out string) string {
	return strings.TrimSpace(regexp.MustCompile(`Warning: [^\n]*\n`).ReplaceAllString(out, ""))
}
