package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/teamspace"
)

// ingressJSON is an Ingress with one rule per host ("" a rule without
// host), a defaultBackend if asked, and TLS for tlsHosts.
func ingressJSON(name string, defaultBackend bool, tlsHosts []string, hosts ...string) string {
	backend := map[string]any{"service": map[string]any{"name": "web", "port": map[string]any{"number": 80}}}
	var rules []any
	for _, h := range hosts {
		rule := map[string]any{"http": map[string]any{"paths": []any{map[string]any{"path": "/", "pathType": "Prefix", "backend": backend}}}}
		if h != "" {
			rule["host"] = h
		}
		rules = append(rules, rule)
	}
	spec := map[string]any{}
	if len(rules) > 0 {
		spec["rules"] = rules
	}
	if defaultBackend {
		spec["defaultBackend"] = backend
	}
	if len(tlsHosts) > 0 {
		spec["tls"] = []any{map[string]any{"hosts": tlsHosts, "secretName": "tls"}}
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": map[string]any{"name": name}, "spec": spec})
	return string(b)
}

func httpRouteJSON(name string, hostnames ...string) string {
	spec := map[string]any{"parentRefs": []any{map[string]any{"name": "gw"}}}
	if len(hostnames) > 0 {
		spec["hostnames"] = hostnames
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"name": name}, "spec": spec})
	return string(b)
}

// installHTTPRouteCRD installs a stand-in for Gateway API's HTTPRoute CRD
// (its group, version and names; any spec) for the test, and lets owners
// write routes (as Gateway API's own aggregated roles would).
func installHTTPRouteCRD(t *testing.T) {
	t.Helper()
	crd := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"httproutes.gateway.networking.k8s.io","annotations":{"api-approved.kubernetes.io":"https://github.com/kubernetes-sigs/gateway-api/pull/1538"}},
"spec":{"group":"gateway.networking.k8s.io","scope":"Namespaced","names":{"plural":"httproutes","singular":"httproute","kind":"HTTPRoute","listKind":"HTTPRouteList"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	if _, err := kubectl(t, "", "get", "crd", "httproutes.gateway.networking.k8s.io"); err != nil {
		mustKubectl(t, crd, "create", "-f", "-")
		deleteOnCleanup(t, "crd", "httproutes.gateway.networking.k8s.io")
	}
	mustKubectl(t, "", "wait", "--for=condition=Established", "crd/httproutes.gateway.networking.k8s.io", "--timeout=30s")
	role := "teamspace-test-httproutes"
	if _, err := kubectl(t, "", "get", "clusterrole", role); err != nil {
		mustKubectl(t, "", "create", "clusterrole", role, "--verb=create,update,patch", "--resource=httproutes.gateway.networking.k8s.io")
		deleteOnCleanup(t, "clusterrole", role)
	}
}

// TestHostnamesBelongToOneTeam (issue #41, item 2): in team-<name> its
// owner's Ingress (or HTTPRoute) may serve <name>.<ingressDomain> and names
// under it, nothing else: not another team's name, not the domain itself,
// not a host without a rule of its own (a catch-all rule or a
// defaultBackend would take every host nobody else serves), and no host at
// all while the platform names no domain. The platform team is not held; a
// namespace that is no team's is not either; an update is held only in the
// hosts it adds.
func TestHostnamesBelongToOneTeam(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "web")
	owner, ns, other, platform := c.owner, c.ns, c.other, c.platform
	name := strings.TrimPrefix(ns, teamspace.NamespacePrefix)
	create := func(who []string, namespace, manifest string) error { return dryRunCreate(t, who, namespace, manifest) }
	refusedWith := func(t *testing.T, what string, err error, want ...string) {
		t.Helper()
		if err == nil || strings.Contains(strings.TrimSpace(err.Error()), "\n") {
			t.Errorf("the owner's %s: %v, want one line refusing it", what, err)
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("the owner's %s: %v\nwant it to say %q", what, err, w)
			}
		}
	}
	mine := name + ".apps.example.com"

	// Shipped: no domain, no hostname.
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err := create(as(owner), ns, ingressJSON("web", false, nil, mine))
		return err != nil && strings.Contains(err.Error(), "teamspace-hostnames")
	}) {
		t.Fatal("namespaces.yaml's teamspace-hostnames does not refuse an owner's Ingress 10s after it was applied")
	}
	refusedWith(t, "Ingress while no domain is named", create(as(owner), ns, ingressJSON("web", false, nil, mine)),
		"Ingress "+ns+"/web: host "+mine+" is not this team's", "the platform has named no domain for teams (key ingressDomain")

	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "ingressDomain", "apps.example.com")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { return create(as(owner), ns, ingressJSON("web", false, nil, mine)) == nil }) {
		t.Fatalf("with ingressDomain apps.example.com the owner's Ingress for %s: %v", mine, create(as(owner), ns, ingressJSON("web", false, nil, mine)))
	}
	for what, manifest := range map[string]string{
		"its own name":         ingressJSON("web", false, nil, mine),
		"a name under it":      ingressJSON("web", false, nil, "shop."+mine),
		"a wildcard under it":  ingressJSON("web", false, []string{"*." + mine}, "*."+mine),
		"several of its names": ingressJSON("web", false, []string{mine, "api." + mine}, mine, "api."+mine),
	} {
		wantAccepted(t, "the owner's Ingress for "+what, create(as(owner), ns, manifest))
	}
	allowed := "only " + mine + " and names under it (*." + mine + ")"
	refused := map[string]struct{ manifest, want string }{
		"another team's name":               {ingressJSON("web", false, nil, "shop.apps.example.com"), "host shop.apps.example.com is not this team's"},
		"another team's name under it":      {ingressJSON("web", false, nil, "www.other.apps.example.com"), "host www.other.apps.example.com"},
		"the domain itself":                 {ingressJSON("web", false, nil, "apps.example.com"), "host apps.example.com"},
		"a wildcard over every team":        {ingressJSON("web", false, nil, "*.apps.example.com"), "host *.apps.example.com"},
		"its name as a prefix of another's": {ingressJSON("web", false, nil, "x"+mine), "host x" + mine},
		"a host outside the domain":         {ingressJSON("web", false, nil, "shop.example.com"), "host shop.example.com"},
		"a TLS host outside":                {ingressJSON("web", false, []string{"bank.example.com"}, mine), "host bank.example.com"},
		"a defaultBackend":                  {ingressJSON("web", true, nil), "a rule without host or a spec.defaultBackend would serve every hostname nobody else serves"},
		"a rule without host":               {ingressJSON("web", false, nil, mine, ""), "a rule without host"},
	}
	for what, c := range refused {
		t.Run("refused: "+what, func(t *testing.T) {
			refusedWith(t, what, create(as(owner), ns, c.manifest), c.want, allowed)
			wantAccepted(t, "the platform team's", create(platform, ns, c.manifest))
			wantAccepted(t, "system:masters'", create(nil, ns, c.manifest))
			wantAccepted(t, "the owner's, in a namespace that is no team's", create(as(owner), other, c.manifest))
		})
	}

	t.Run("updates: held in the hosts they add", func(t *testing.T) {
		legacy := ingressJSON("legacy", false, nil, "shop.example.com")
		if _, err := kubectl(t, legacy, append(platform, "-n", ns, "create", "-f", "-")...); err != nil {
			t.Fatal(err)
		}
		_, err := kubectl(t, "", append(as(owner), "-n", ns, "annotate", "ingress", "legacy", "team=web")...)
		wantAccepted(t, "annotating the platform's Ingress for another host", err)
		_, err = kubectl(t, "", append(as(owner), "-n", ns, "patch", "ingress", "legacy", "--type=json", "-p",
			`[{"op":"add","path":"/spec/rules/-","value":{"host":"bank.example.com","http":{"paths":[{"path":"/","pathType":"Prefix","backend":{"service":{"name":"web","port":{"number":80}}}}]}}}]`)...)
		refusedWith(t, "host added to it", err, "host bank.example.com is not this team's")
	})

	t.Run("HTTPRoute", func(t *testing.T) {
		installHTTPRouteCRD(t)
		mustKubectl(t, "", "create", "rolebinding", "routes", "--clusterrole=teamspace-test-httproutes", "--user="+owner, "-n", ns)
		if !eventually(20*time.Second, 200*time.Millisecond, func() bool { return create(as(owner), ns, httpRouteJSON("web", mine)) == nil }) {
			t.Fatalf("the owner's HTTPRoute for %s: %v", mine, create(as(owner), ns, httpRouteJSON("web", mine)))
		}
		refusedWith(t, "HTTPRoute for another team's name", create(as(owner), ns, httpRouteJSON("web", "shop.apps.example.com")),
			"HTTPRoute "+ns+"/web: host shop.apps.example.com is not this team's")
		refusedWith(t, "HTTPRoute without hostnames", create(as(owner), ns, httpRouteJSON("web")), "no spec.hostnames would serve every hostname")
		wantAccepted(t, "the platform team's HTTPRoute without hostnames", create(nil, ns, httpRouteJSON("web")))
	})

	t.Run("a domain that is not a DNS name", func(t *testing.T) {
		setLimit(t, "ingressDomain", "apps_example")
		var err error
		if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
			err = create(as(owner), ns, ingressJSON("web", false, nil, mine))
			return err != nil && strings.Contains(err.Error(), `key ingressDomain of ConfigMap teamspace-system/teamspace-limits is "apps_example", not a DNS name`)
		}) {
			t.Errorf("ingressDomain apps_example: %v, want refused naming the key", err)
		}
	})
}
