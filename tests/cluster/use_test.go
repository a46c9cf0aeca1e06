package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// What a team may use of the cluster (hack/deploy/team-use.yaml, issue
// #51), tried as the owner of a team namespace by impersonation, each rule
// refused and its control admitted.

// tokenSecretJSON is a Secret of type kubernetes.io/service-account-token
// for ServiceAccount sa: a token that never expires.
func tokenSecretJSON(name, sa string) string {
	b, _ := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
		"metadata": map[string]any{"name": name, "annotations": map[string]any{"kubernetes.io/service-account.name": sa}},
	})
	return string(b)
}

// podJSON is a pod of one container of image, with extra fields merged
// into its spec.
func podJSON(name, image string, spec map[string]any) string {
	s := map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}
	for k, v := range spec {
		s[k] = v
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name}, "spec": s})
	return string(b)
}

// projectedToken is a pod spec's volumes with one projected
// serviceAccountToken asking for seconds (0: left to the API server's
// default, an hour).
func projectedToken(seconds int) map[string]any {
	src := map[string]any{"path": "token"}
	if seconds > 0 {
		src["expirationSeconds"] = seconds
	}
	return map[string]any{"volumes": []any{map[string]any{"name": "token", "projected": map[string]any{
		"sources": []any{map[string]any{"serviceAccountToken": src}}}}}}
}

// createToken asks for a token of ServiceAccount sa in ns as who (kubectl
// create token, a TokenRequest), for duration ("" : the default).
func createToken(t *testing.T, who []string, ns, sa, duration string) error {
	t.Helper()
	args := append(append([]string{}, who...), "-n", ns, "create", "token", sa)
	if duration != "" {
		args = append(args, "--duration="+duration)
	}
	_, err := kubectl(t, "", args...)
	return err
}

// wantRefusedBy says err is a one-line refusal by policy containing want.
func wantRefusedBy(t *testing.T, what string, err error, policy, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: admitted, want refused by %s saying %q", what, policy, want)
		return
	}
	msg := withoutWarnings(err.Error())
	if !strings.Contains(msg, "ValidatingAdmissionPolicy '"+policy+"'") || !strings.Contains(msg, want) || strings.Contains(msg, "\n") {
		t.Errorf("%s: %v; want one line, refused by %s saying %q", what, msg, policy, want)
	}
}

// TestTokenSecretsRefused (item 4): in a team namespace the owner cannot
// make a Secret of type kubernetes.io/service-account-token (a token that
// never expires, kept after the owner is removed); an Opaque Secret is
// theirs, system:masters is not held, and in a namespace that is no
// team's the owner (admin there too) is not either.
func TestTokenSecretsRefused(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "tok")
	mustKubectl(t, "", "-n", c.ns, "create", "serviceaccount", "keeper")
	mustKubectl(t, "", "-n", c.other, "create", "serviceaccount", "keeper")
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, tokenSecretJSON("forever", "keeper"))
		return err != nil && strings.Contains(err.Error(), "teamspace-token-secrets")
	}) {
		t.Fatalf("the owner's service-account-token Secret: %v; want refused by teamspace-token-secrets", err)
	}
	wantRefusedBy(t, "the owner's service-account-token Secret", err, "teamspace-token-secrets",
		"Secret "+c.ns+"/forever: type kubernetes.io/service-account-token is not allowed in a team namespace: its token never expires")
	wantAccepted(t, "the owner's Opaque Secret", dryRunCreate(t, as(c.owner), c.ns, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"plain"},"stringData":{"a":"b"}}`))
	wantAccepted(t, "system:masters' token Secret", dryRunCreate(t, nil, c.ns, tokenSecretJSON("forever", "keeper")))
	wantAccepted(t, "the owner's token Secret in a namespace that is no team's", dryRunCreate(t, as(c.owner), c.other, tokenSecretJSON("forever", "keeper")))
}

// TestTokenLifetime (item 4) with the shipped maxTokenLifetime of 24h: the
// owner's `kubectl create token --duration=8760h` is refused naming the
// limit and the key, 24h and the default hour are admitted; a pod whose
// projected token asks for a year is refused, one with the default, the
// kube-api-access volume the API server adds (3607 s) and 24h admitted;
// the platform team is not held, nor a namespace that is no team's.
func TestTokenLifetime(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "life")
	for _, ns := range []string{c.ns, c.other} {
		mustKubectl(t, "", "-n", ns, "create", "serviceaccount", "keeper")
	}
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = createToken(t, as(c.owner), c.ns, "keeper", "8760h")
		return err != nil && strings.Contains(err.Error(), "teamspace-token-lifetime")
	}) {
		t.Fatalf("the owner's token for 8760h: %v; want refused by teamspace-token-lifetime", err)
	}
	wantRefusedBy(t, "the owner's token for 8760h", err, "teamspace-token-lifetime",
		"TokenRequest for ServiceAccount "+c.ns+"/keeper: a lifetime of 31536000s is above the platform limit of 24h (86400s) in a team namespace (key maxTokenLifetime of ConfigMap teamspace-system/teamspace-limits)")
	wantRefusedBy(t, "the owner's token for 25h", createToken(t, as(c.owner), c.ns, "keeper", "25h"), "teamspace-token-lifetime", "a lifetime of 90000s")
	wantAccepted(t, "the owner's token for 24h", createToken(t, as(c.owner), c.ns, "keeper", "24h"))
	wantAccepted(t, "the owner's token of the default lifetime", createToken(t, as(c.owner), c.ns, "keeper", ""))
	wantAccepted(t, "the platform team's token for 8760h", createToken(t, c.platform, c.ns, "keeper", "8760h"))
	wantAccepted(t, "the owner's token for 8760h in a namespace that is no team's", createToken(t, as(c.owner), c.other, "keeper", "8760h"))

	pod := func(seconds int) string {
		return podJSON("p", "registry.invalid/none:1", with(projectedToken(seconds), "serviceAccountName", "keeper"))
	}
	wantRefusedBy(t, "the owner's pod with a projected token of a year", dryRunCreate(t, as(c.owner), c.ns, pod(31536000)), "teamspace-token-lifetime",
		"Pod "+c.ns+"/p: projected serviceAccountToken of volume token asks for a lifetime above the platform limit of 24h (86400s)")
	for _, seconds := range []int{0, 3607, 86400} {
		wantAccepted(t, "the owner's pod with a projected token of "+time.Duration(seconds*int(time.Second)).String(), dryRunCreate(t, as(c.owner), c.ns, pod(seconds)))
	}
	wantAccepted(t, "the platform team's pod with a projected token of a year", dryRunCreate(t, c.platform, c.ns, pod(31536000)))
	wantAccepted(t, "the owner's pod with a projected token of a year in a namespace that is no team's", dryRunCreate(t, as(c.owner), c.other, pod(31536000)))
}

// TestTokenLifetimeOptions (item 4): with maxTokenLifetime unset, the
// owner's token for 8760h is admitted (a platform that sets nothing keeps
// the behaviour from before); with a value that is not a duration of at
// least 10m, every TokenRequest of the owner is refused naming the key,
// and a requester's new TeamSpace too (limits.yaml).
func TestTokenLifetimeOptions(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "life")
	mustKubectl(t, "", "-n", c.ns, "create", "serviceaccount", "keeper")
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "maxTokenLifetime", "")
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = createToken(t, as(c.owner), c.ns, "keeper", "8760h")
		return err == nil
	}) {
		t.Errorf("maxTokenLifetime unset: the owner's token for 8760h: %v; want admitted", err)
	}
	setLimit(t, "maxTokenLifetime", "5m")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = createToken(t, as(c.owner), c.ns, "keeper", "")
		return err != nil
	}) {
		t.Fatal("maxTokenLifetime 5m: the owner's token is admitted, want refused naming the key")
	}
	wantRefusedBy(t, "the owner's token while maxTokenLifetime is 5m", err, "teamspace-token-lifetime",
		`key maxTokenLifetime of ConfigMap teamspace-system/teamspace-limits is "5m", not a duration of at least 10m`)
	settled(t, within(), `key maxTokenLifetime is "5m", not a duration of at least 10m`)
}

// TestRegistries (item 2): with allowedRegistries unset every image is
// admitted; with "registry.example.com, ghcr.io/acme" the owner's pod is
// refused for an image from anywhere else, matched on the parsed
// reference (a short name is Docker Hub's, a longer host or another path
// is not the entry), in containers, init containers and ephemeral
// containers, on create and when an update changes an image; a label on a
// pod whose image was admitted before is not held, nor the platform team,
// nor a namespace that is no team's. A malformed list refuses every pod
// naming the key, and a requester's new TeamSpace (limits.yaml).
func TestRegistries(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "reg")
	const evil = "evil.example.net/miner:1"
	wantAccepted(t, "allowedRegistries unset: the owner's pod of "+evil, dryRunCreate(t, as(c.owner), c.ns, podJSON("p", evil, nil)))
	// A pod of the platform's, from anywhere, made before the list.
	mustKubectl(t, podJSON("before", evil, nil), append(c.platform, "-n", c.ns, "create", "-f", "-")...)

	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "allowedRegistries", "registry.example.com, ghcr.io/acme")
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, podJSON("p", evil, nil))
		return err != nil && strings.Contains(err.Error(), "teamspace-registries")
	}) {
		t.Fatalf("the owner's pod of %s: %v; want refused by teamspace-registries", evil, err)
	}
	wantRefusedBy(t, "the owner's pod of "+evil, err, "teamspace-registries",
		"Pod "+c.ns+"/p: image "+evil+" (evil.example.net/miner) is not from a registry the platform allows in a team namespace: registry.example.com, ghcr.io/acme (key allowedRegistries of ConfigMap teamspace-system/teamspace-limits)")
	for image, want := range map[string]string{
		"nginx":                                "image nginx (docker.io/library/nginx)",
		"registry.example.com.evil.io/x":       "(registry.example.com.evil.io/x)",
		"registry.example.com@evil.io":         "image registry.example.com@evil.io (not an image reference",
		"registry.example.com@sha256:" + hex32: "(docker.io/library/registry.example.com)",
		"registry.example.com:443/x":           "(registry.example.com:443/x)",
		"ghcr.io/acmeevil/web":                 "(ghcr.io/acmeevil/web)",
		"https://registry.example.com/x":       "(not an image reference",
		"registry.example.com/UPPER":           "(not an image reference",
	} {
		wantRefusedBy(t, "the owner's pod of "+image, dryRunCreate(t, as(c.owner), c.ns, podJSON("p", image, nil)), "teamspace-registries", want)
	}
	for _, image := range []string{"registry.example.com/x:1", "registry.example.com/team/x@sha256:" + hex32 + hex32, "REGISTRY.example.com/x", "ghcr.io/acme/web:2"} {
		wantAccepted(t, "the owner's pod of "+image, dryRunCreate(t, as(c.owner), c.ns, podJSON("p", image, nil)))
	}
	withInit := podJSON("p", "registry.example.com/x:1", map[string]any{"initContainers": []any{map[string]any{"name": "init", "image": evil}}})
	wantRefusedBy(t, "the owner's pod with an init container of "+evil, dryRunCreate(t, as(c.owner), c.ns, withInit), "teamspace-registries", "image "+evil)
	wantAccepted(t, "the platform team's pod of "+evil, dryRunCreate(t, c.platform, c.ns, podJSON("p", evil, nil)))
	wantAccepted(t, "the owner's pod of "+evil+" in a namespace that is no team's", dryRunCreate(t, as(c.owner), c.other, podJSON("p", evil, nil)))

	// Updates: held in the images they change or add.
	mustKubectl(t, podJSON("good", "registry.example.com/x:1", nil), append(as(c.owner), "-n", c.ns, "create", "-f", "-")...)
	_, err = kubectl(t, "", append(as(c.owner), "-n", c.ns, "label", "pod", "before", "checked=yes")...)
	wantAccepted(t, "the owner's label on a pod whose image was admitted before the list", err)
	_, err = kubectl(t, "", append(as(c.owner), "-n", c.ns, "set", "image", "pod/good", "c="+evil, "--dry-run=server")...)
	wantRefusedBy(t, "the owner's pod updated to "+evil, err, "teamspace-registries", "image "+evil)
	// Ephemeral containers (kubectl debug): admin has no right to add them,
	// so a user the platform let debug in the namespace, who is not exempt.
	debugger := "debugger-" + suffix(t, 6)
	mustKubectl(t, "", "-n", c.ns, "create", "role", "debug-"+debugger, "--verb=get", "--resource=pods", "--verb=patch", "--resource=pods/ephemeralcontainers")
	mustKubectl(t, "", "-n", c.ns, "create", "rolebinding", "debug-"+debugger, "--role=debug-"+debugger, "--user="+debugger)
	_, err = kubectl(t, "", append(as(debugger), "-n", c.ns, "debug", "--profile=baseline", "pod/good", "--image="+evil, "--container=debug1")...)
	wantRefusedBy(t, "an ephemeral container of "+evil, err, "teamspace-registries", "image "+evil)
	_, err = kubectl(t, "", append(as(debugger), "-n", c.ns, "debug", "--profile=baseline", "pod/good", "--image=registry.example.com/debug:1", "--container=debug2")...)
	wantAccepted(t, "an ephemeral container from registry.example.com", err)

	setLimit(t, "allowedRegistries", "https://registry.example.com")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, podJSON("p", "registry.example.com/x:1", nil))
		return err != nil && strings.Contains(err.Error(), "key allowedRegistries")
	}) {
		t.Fatalf("allowedRegistries with a scheme: the owner's pod: %v; want refused naming the key", err)
	}
	wantRefusedBy(t, "the owner's pod while allowedRegistries has a scheme", err, "teamspace-registries",
		`refused while key allowedRegistries of ConfigMap teamspace-system/teamspace-limits has "https://registry.example.com", not a registry`)
	settled(t, within(), `key allowedRegistries is "https://registry.example.com", not a comma-separated list of registries`)
}

// hex32 is 32 hex digits, the shortest digest a reference may carry.
const hex32 = "0123456789abcdef0123456789abcdef"

// pvcJSON is a PersistentVolumeClaim of 1Gi of class ("" : none named).
func pvcJSON(name, class string) string {
	spec := map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}}
	if class != "" {
		spec["storageClassName"] = class
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": name}, "spec": spec})
	return string(b)
}

// withClass is an Ingress manifest with spec.ingressClassName set.
func withClass(ingress, class string) string {
	var obj map[string]any
	_ = json.Unmarshal([]byte(ingress), &obj)
	obj["spec"].(map[string]any)["ingressClassName"] = class
	b, _ := json.Marshal(obj)
	return string(b)
}

// routeTo is an HTTPRoute for host attached to the Gateways given as
// <namespace>/<name> ("" namespace: the route's own).
func routeTo(host string, gateways ...string) string {
	var refs []any
	for _, g := range gateways {
		ns, name, _ := strings.Cut(g, "/")
		ref := map[string]any{"name": name}
		if ns != "" {
			ref["namespace"] = ns
		}
		refs = append(refs, ref)
	}
	b, _ := json.Marshal(map[string]any{"apiVersion": "gateway.networking.k8s.io/v1", "kind": "HTTPRoute", "metadata": map[string]any{"name": "route"},
		"spec": map[string]any{"parentRefs": refs, "hostnames": []any{host}}})
	return string(b)
}

// TestClasses (item 1): with the class keys unset the owner may use any
// storage, priority, runtime and ingress class and attach routes to any
// Gateway, but the priority classes system-node-critical and
// system-cluster-critical; with them set, only the classes they name: a
// PVC, a pod, an Ingress (field or old annotation) or a route naming
// another is refused naming the class, the allowed ones and the key; a
// PVC without a class gets the cluster's default class, which is then
// refused too, unless the platform names a default class for teams
// (defaultStorageClass). The platform team is not held, nor a namespace
// that is no team's. A malformed list refuses what it holds naming the key, and a
// requester's new TeamSpace.
func TestClasses(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "cls")
	s := suffix(t, 5)
	fast, high, kata := "fast-ssd-"+s, "platform-high-"+s, "kata-"+s
	mustKubectl(t, `{"apiVersion":"scheduling.k8s.io/v1","kind":"PriorityClass","metadata":{"name":"`+high+`"},"value":100000}`, "create", "-f", "-")
	deleteOnCleanup(t, "priorityclass", high)
	mustKubectl(t, `{"apiVersion":"node.k8s.io/v1","kind":"RuntimeClass","metadata":{"name":"`+kata+`"},"handler":"kata"}`, "create", "-f", "-")
	deleteOnCleanup(t, "runtimeclass", kata)
	installHTTPRouteCRD(t)
	mustKubectl(t, "", "create", "rolebinding", "routes", "--clusterrole=teamspace-test-httproutes", "--user="+c.owner, "-n", c.ns)
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "ingressDomain", "apps.example.com")
	host := strings.TrimPrefix(c.ns, "team-") + ".apps.example.com"
	owner := func(manifest string) error { return dryRunCreate(t, as(c.owner), c.ns, manifest) }
	pod := func(field, class string) string {
		return podJSON("p", "registry.invalid/none:1", map[string]any{field: class})
	}

	// Unset: every class, but the two system priority classes.
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = owner(pod("priorityClassName", "system-cluster-critical"))
		return err != nil && strings.Contains(err.Error(), "teamspace-classes")
	}) {
		t.Fatalf("the owner's pod of priority class system-cluster-critical: %v; want refused by teamspace-classes", err)
	}
	wantRefusedBy(t, "the owner's pod of priority class system-cluster-critical", err, "teamspace-classes",
		"Pod "+c.ns+"/p: priority class system-cluster-critical is not one the pods of TeamSpace "+strings.TrimPrefix(c.ns, "team-")+
			" may use: system-node-critical and system-cluster-critical preempt every other pod")
	wantRefusedBy(t, "the owner's pod of priority class system-node-critical", owner(pod("priorityClassName", "system-node-critical")), "teamspace-classes", "priority class system-node-critical")
	wantAccepted(t, "the platform team's pod of priority class system-cluster-critical", dryRunCreate(t, c.platform, c.ns, pod("priorityClassName", "system-cluster-critical")))
	for what, manifest := range map[string]string{
		"PVC of class " + fast:            pvcJSON("data", fast),
		"pod of priority class " + high:   pod("priorityClassName", high),
		"pod of runtime class " + kata:    pod("runtimeClassName", kata),
		"Ingress of class internal":       withClass(ingressJSON("web", false, nil, host), "internal"),
		"route attached to infra/private": routeTo(host, "infra/private"),
	} {
		wantAccepted(t, "keys unset: the owner's "+what, owner(manifest))
	}

	setLimit(t, "allowedStorageClasses", "team-hdd")
	setLimit(t, "allowedPriorityClasses", "low")
	setLimit(t, "allowedRuntimeClasses", "runc")
	setLimit(t, "allowedIngressClasses", "public")
	setLimit(t, "allowedGateways", "infra/public, shared/*")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { return owner(pvcJSON("data", fast)) != nil }) {
		t.Fatalf("allowedStorageClasses team-hdd: the owner's PVC of class %s is still admitted", fast)
	}
	source := "ConfigMap teamspace-system/teamspace-limits"
	team := strings.TrimPrefix(c.ns, "team-")
	oldAnnotation := ingressJSON("web", false, nil, host)
	oldAnnotation = strings.Replace(oldAnnotation, `"metadata":{"name":"web"}`, `"metadata":{"name":"web","annotations":{"kubernetes.io/ingress.class":"internal"}}`, 1)
	for what, r := range map[string]struct{ manifest, want string }{
		"PVC of class " + fast: {pvcJSON("data", fast), "PersistentVolumeClaim " + c.ns + "/data: storage class " + fast + " is not one TeamSpace " + team +
			" may use: team-hdd (key allowedStorageClasses of " + source + ", and spec.allow.storageClasses of TeamSpace " + team + ")"},
		"pod of priority class " + high:                 {pod("priorityClassName", high), "priority class " + high + " is not one the pods of TeamSpace " + team + " may use (a pod that names none gets the cluster's globalDefault class): low (key allowedPriorityClasses"},
		"pod of priority class system-cluster-critical": {pod("priorityClassName", "system-cluster-critical"), "priority class system-cluster-critical is not one"},
		"pod of runtime class " + kata:                  {pod("runtimeClassName", kata), "runtime class " + kata + " is not one the pods of TeamSpace " + team + " may use: runc (key allowedRuntimeClasses"},
		"Ingress of class internal":                     {withClass(ingressJSON("web", false, nil, host), "internal"), "Ingress " + c.ns + "/web: ingress class internal is not one TeamSpace " + team + " may use"},
		"Ingress of class internal by annotation":       {oldAnnotation, "ingress class internal is not one"},
		"route attached to infra/private":               {routeTo(host, "infra/private", "infra/public"), "HTTPRoute " + c.ns + "/route: Gateway infra/private is not one the routes of TeamSpace " + team + " may attach to: infra/public, shared/* (key allowedGateways"},
		"route attached to a Gateway of its own":        {routeTo(host, "/gw"), "Gateway " + c.ns + "/gw is not one"},
	} {
		wantRefusedBy(t, "the owner's "+what, owner(r.manifest), "teamspace-classes", r.want)
	}
	for what, manifest := range map[string]string{
		"PVC of class team-hdd":                        pvcJSON("data", "team-hdd"),
		"PVC of no class (the cluster has no default)": pvcJSON("data", ""),
		"pod of no class":                              podJSON("p", "registry.invalid/none:1", nil),
		"Ingress of class public":                      withClass(ingressJSON("web", false, nil, host), "public"),
		"route attached to infra/public and shared/x":  routeTo(host, "infra/public", "shared/x"),
	} {
		wantAccepted(t, "the owner's "+what, owner(manifest))
	}
	wantAccepted(t, "the platform team's PVC of class "+fast, dryRunCreate(t, c.platform, c.ns, pvcJSON("data", fast)))
	wantAccepted(t, "the owner's PVC of class "+fast+" in a namespace that is no team's", dryRunCreate(t, as(c.owner), c.other, pvcJSON("data", fast)))

	// The cluster's default class is filled in before the policy sees the
	// claim: it must be allowed too.
	standard := "standard-" + s
	mustKubectl(t, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"`+standard+`","annotations":{"storageclass.kubernetes.io/is-default-class":"true"}},"provisioner":"example.com/none"}`, "create", "-f", "-")
	deleteOnCleanup(t, "storageclass", standard)
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { return owner(pvcJSON("data", "")) != nil }) {
		t.Errorf("with default StorageClass %s not allowed, the owner's PVC of no class is admitted", standard)
	}
	wantRefusedBy(t, "the owner's PVC of no class, given the default "+standard, owner(pvcJSON("data", "")), "teamspace-classes",
		"storage class "+standard+" (the cluster's default, given to a claim that names none; name a class, or the platform team sets defaultStorageClass) is not one")
	// The platform's default class for teams, in place of the cluster's,
	// for a claim that names none; one that names a class keeps it.
	setLimit(t, "defaultStorageClass", "team-hdd")
	classOf := func(manifest string) string {
		out, err := kubectl(t, manifest, append(as(c.owner), "-n", c.ns, "create", "--dry-run=server", "-o", "jsonpath={.spec.storageClassName}", "-f", "-")...)
		if err != nil {
			return "refused: " + err.Error()
		}
		return out
	}
	var got string
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { got = classOf(pvcJSON("data", "")); return got == "team-hdd" }) {
		t.Errorf("defaultStorageClass team-hdd: the owner's PVC of no class got %q, want team-hdd", got)
	}
	wantRefusedBy(t, "defaultStorageClass team-hdd: the owner's PVC of class "+fast, owner(pvcJSON("data", fast)), "teamspace-classes", "storage class "+fast+" is not one")
	if got := classOf(pvcJSON("data", "team-hdd")); got != "team-hdd" {
		t.Errorf("defaultStorageClass team-hdd: the owner's PVC of class team-hdd: %q", got)
	}
	if got, err := kubectl(t, pvcJSON("data", ""), append(c.platform, "-n", c.ns, "create", "--dry-run=server", "-o", "jsonpath={.spec.storageClassName}", "-f", "-")...); err != nil || got != standard {
		t.Errorf("defaultStorageClass team-hdd: the platform team's PVC of no class got %q, %v; want the cluster's default %s", got, err, standard)
	}
	setLimit(t, "defaultStorageClass", "Team_HDD")
	settled(t, within(), `key defaultStorageClass is "Team_HDD", not a class name (a DNS name)`)
	setLimit(t, "defaultStorageClass", "")

	setLimit(t, "allowedStorageClasses", "Fast_SSD")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = owner(pvcJSON("data", "team-hdd"))
		return err != nil && strings.Contains(err.Error(), "key allowedStorageClasses")
	}) {
		t.Fatalf("allowedStorageClasses Fast_SSD: the owner's PVC: %v; want refused naming the key", err)
	}
	wantRefusedBy(t, "the owner's PVC while allowedStorageClasses is malformed", err, "teamspace-classes",
		"refused while key allowedStorageClasses of "+source+" is not a comma-separated list of class names (DNS names)")
	wantAccepted(t, "the owner's pod while allowedStorageClasses is malformed", owner(podJSON("p", "registry.invalid/none:1", nil)))
	settled(t, within(), `key allowedStorageClasses is "Fast_SSD", not a comma-separated list of class names`)
	setLimit(t, "allowedStorageClasses", "")
	setLimit(t, "allowedGateways", "infra")
	settled(t, within(), `key allowedGateways is "infra", not a comma-separated list of <namespace>/<name> or <namespace>/*`)
}

// TestTolerations (item 3) with the shipped forbiddenTolerations (the
// control-plane taint): the owner's pod tolerating it, under either name,
// or every taint, or naming its node (spec.nodeName skips the taints), is
// refused, also a toleration added to a pod later; a toleration of another
// taint is admitted, and the platform team's, and any in a namespace that
// is no team's.
func TestTolerations(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "tol")
	toleration := func(tolerations ...map[string]any) string {
		var list []any
		for _, t := range tolerations {
			list = append(list, t)
		}
		return podJSON("p", "registry.invalid/none:1", map[string]any{"tolerations": list})
	}
	controlPlane := map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, toleration(controlPlane))
		return err != nil && strings.Contains(err.Error(), "teamspace-tolerations")
	}) {
		t.Fatalf("the owner's pod tolerating the control plane: %v; want refused by teamspace-tolerations", err)
	}
	wantRefusedBy(t, "the owner's pod tolerating the control plane", err, "teamspace-tolerations",
		"Pod "+c.ns+"/p: a toleration of node-role.kubernetes.io/control-plane is not allowed in a team namespace: the platform keeps the nodes with taints"+
			" node-role.kubernetes.io/control-plane, node-role.kubernetes.io/master from the teams (key forbiddenTolerations of ConfigMap teamspace-system/teamspace-limits)")
	wantRefusedBy(t, "the owner's pod tolerating the old master taint", dryRunCreate(t, as(c.owner), c.ns, toleration(map[string]any{"key": "node-role.kubernetes.io/master", "operator": "Equal", "value": "", "effect": "NoSchedule"})),
		"teamspace-tolerations", "a toleration of node-role.kubernetes.io/master")
	wantRefusedBy(t, "the owner's pod tolerating every taint", dryRunCreate(t, as(c.owner), c.ns, toleration(map[string]any{"operator": "Exists"})),
		"teamspace-tolerations", "a toleration of every taint (operator Exists without a key)")
	wantRefusedBy(t, "the owner's pod naming its node", dryRunCreate(t, as(c.owner), c.ns, podJSON("p", "registry.invalid/none:1", map[string]any{"nodeName": "control-plane-1"})),
		"teamspace-tolerations", "Pod "+c.ns+"/p: spec.nodeName is not allowed in a team namespace: it skips the scheduler")
	gpu := map[string]any{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}
	wantAccepted(t, "the owner's pod tolerating gpu", dryRunCreate(t, as(c.owner), c.ns, toleration(gpu)))
	wantAccepted(t, "the platform team's pod tolerating the control plane", dryRunCreate(t, c.platform, c.ns, toleration(controlPlane)))
	wantAccepted(t, "the owner's pod tolerating the control plane in a namespace that is no team's", dryRunCreate(t, as(c.owner), c.other, toleration(controlPlane)))

	// A toleration added later (a pod's tolerations may grow).
	mustKubectl(t, toleration(gpu), append(as(c.owner), "-n", c.ns, "create", "-f", "-")...)
	add := `{"spec":{"tolerations":[{"key":"gpu","operator":"Exists","effect":"NoSchedule"},{"key":"node-role.kubernetes.io/control-plane","operator":"Exists","effect":"NoSchedule"}]}}`
	_, err = kubectl(t, "", append(as(c.owner), "-n", c.ns, "patch", "pod", "p", "--type=merge", "-p", add, "--dry-run=server")...)
	wantRefusedBy(t, "the owner adding the control-plane toleration to a pod", err, "teamspace-tolerations", "a toleration of node-role.kubernetes.io/control-plane")
	_, err = kubectl(t, "", append(as(c.owner), "-n", c.ns, "label", "pod", "p", "checked=yes")...)
	wantAccepted(t, "the owner's label on a pod tolerating gpu", err)
}

// TestTolerationsOptions (item 3): with forbiddenTolerations unset the
// owner's pod may tolerate the control plane and name its node (as
// before); with a key that is not a taint key, a pod with tolerations is
// refused naming the key, and a requester's new TeamSpace.
func TestTolerationsOptions(t *testing.T) {
	alone(t, changesLimits)
	c := newTenantCast(t, "tol")
	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "forbiddenTolerations", "")
	controlPlane := podJSON("p", "registry.invalid/none:1", map[string]any{"tolerations": []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists"}}})
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, controlPlane)
		return err == nil
	}) {
		t.Errorf("forbiddenTolerations unset: the owner's pod tolerating the control plane: %v; want admitted", err)
	}
	wantAccepted(t, "forbiddenTolerations unset: the owner's pod naming its node", dryRunCreate(t, as(c.owner), c.ns, podJSON("p", "registry.invalid/none:1", map[string]any{"nodeName": "control-plane-1"})))
	setLimit(t, "forbiddenTolerations", "not a key!")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(c.owner), c.ns, controlPlane)
		return err != nil && strings.Contains(err.Error(), "key forbiddenTolerations")
	}) {
		t.Fatalf("forbiddenTolerations malformed: the owner's pod: %v; want refused naming the key", err)
	}
	wantRefusedBy(t, "the owner's pod while forbiddenTolerations is malformed", err, "teamspace-tolerations", `key forbiddenTolerations of ConfigMap teamspace-system/teamspace-limits has "not a key!", not a taint key`)
	settled(t, within(), `key forbiddenTolerations is "not a key!", not a comma-separated list of taint keys`)
}

// TestAllowOneTeamMore (item 1): the platform team gives one TeamSpace
// more than its limits give every team (spec.allow): the hook writes it on
// the namespace and the owner of that team may then use what it names (a
// system priority class here, which no team may use unless named), the
// owner of another team still may not. A requester, or an editor who is
// not exempt, may not set spec.allow or spec.nodeSelector; the platform
// team may.
func TestAllowOneTeamMore(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "more")
	s := suffix(t, 6)
	owner, name := "owner-"+s, "more-"+s
	createOwned(t, name, ownedBy(with(within(), "objects", shippedMaxObjects, "allow", map[string]any{"priorityClasses": []any{"system-cluster-critical"}}), owner))
	ns := teamspace.NamespaceName(name)
	critical := podJSON("p", "registry.invalid/none:1", map[string]any{"priorityClassName": "system-cluster-critical"})
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { err = dryRunCreate(t, as(owner), ns, critical); return err == nil }) {
		t.Errorf("the owner of TeamSpace %s (spec.allow.priorityClasses: system-cluster-critical): a pod of that class: %v; want admitted", name, err)
	}
	wantRefusedBy(t, "the owner of another team: a pod of class system-cluster-critical", dryRunCreate(t, as(c.owner), c.ns, critical), "teamspace-classes",
		"priority class system-cluster-critical is not one the pods of TeamSpace "+strings.TrimPrefix(c.ns, "team-"))
	// What the policies read off the namespace is not the owners' to write.
	for _, change := range [][]string{
		{"annotate", "namespace", c.ns, v1alpha1.AllowedAnnotationPrefix + "priority-classes=system-cluster-critical"},
		{"annotate", "namespace", ns, "--overwrite", v1alpha1.AllowedAnnotationPrefix + "priority-classes=system-node-critical"},
		{"label", "namespace", ns, "--overwrite", v1alpha1.NodeSelectorLabel + "=true"},
		{"label", "namespace", ns, v1alpha1.NetworkIsolationLabel + "-"},
	} {
		who := owner
		if change[2] == c.ns {
			who = c.owner
		}
		if _, err := kubectl(t, "", append(append(as(who), change...), "--dry-run=server")...); err == nil || !strings.Contains(err.Error(), "Forbidden") {
			t.Errorf("an owner's kubectl %s: %v; want Forbidden", strings.Join(change, " "), err)
		}
	}

	_, user := limitsCast(t, "more")
	for field, value := range map[string]any{"allow": map[string]any{"storageClasses": []any{"fast-ssd"}}, "nodeSelector": map[string]any{"pool": "a"}} {
		_, err := kubectl(t, teamSpace("more-probe-"+s, with(within(), field, value)), append(as(user), "create", "--dry-run=server", "-f", "-")...)
		wantLimitRefusal(t, "a requester's TeamSpace with spec."+field, err, "spec."+field+": what one TeamSpace may use beyond the platform's limits (classes, Gateways, its nodes) is the platform's to give")
		_, err = kubectl(t, teamSpace("more-probe-"+s, with(within(), field, value)), append(as("platform-"+s, platformGroup), "create", "--dry-run=server", "-f", "-")...)
		wantAccepted(t, "the platform team's TeamSpace with spec."+field, err)
	}
	editor := "editor-" + s
	bindRole(t, "teamspace-edit", "User", editor)
	bindRole(t, "teamspace-view", "User", editor)
	_, err = kubectl(t, "", append(as(editor), "patch", "teamspace", name, "--type=merge", "--dry-run=server", "-p", `{"spec":{"allow":{"priorityClasses":["system-node-critical"]}}}`)...)
	wantLimitRefusal(t, "an editor who is not exempt changing spec.allow", err, "spec.allow: what one TeamSpace may use")
	_, err = kubectl(t, "", append(as(editor), "patch", "teamspace", name, "--type=merge", "--dry-run=server", "-p", `{"spec":{"pods":3}}`)...)
	wantAccepted(t, "an editor who is not exempt changing spec.pods of a TeamSpace with spec.allow", err)
}

// TestNodeSelector (item 3): a TeamSpace the platform gave a node selector
// (spec.nodeSelector): every pod its owner creates carries it, filled in
// where the pod leaves a key out or gives it another value (a selector
// of its own beside it stays); a pod of another team gets none.
func TestNodeSelector(t *testing.T) {
	parallel(t)
	c := newTenantCast(t, "nodes")
	s := suffix(t, 6)
	owner, name := "owner-"+s, "nodes-"+s
	createOwned(t, name, ownedBy(with(within(), "objects", shippedMaxObjects, "nodeSelector", map[string]any{"pool": "team-" + s, "topology.kubernetes.io/zone": "eu-1"}), owner))
	ns := teamspace.NamespaceName(name)
	selectorOf := func(who []string, namespace string, spec map[string]any) (string, error) {
		return kubectl(t, podJSON("p", "registry.invalid/none:1", spec), append(who, "-n", namespace, "create", "--dry-run=server", "-o", "jsonpath={.spec.nodeSelector}", "-f", "-")...)
	}
	want := `{"pool":"team-` + s + `","topology.kubernetes.io/zone":"eu-1"}`
	var got string
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { got, err = selectorOf(as(owner), ns, nil); return err == nil && got == want }) {
		t.Errorf("the owner's pod without a node selector: %s, %v; want %s filled in", got, err, want)
	}
	got, err = selectorOf(as(owner), ns, map[string]any{"nodeSelector": map[string]any{"pool": "other", "disk": "ssd"}})
	if wantAll := `{"disk":"ssd","pool":"team-` + s + `","topology.kubernetes.io/zone":"eu-1"}`; err != nil || got != wantAll {
		t.Errorf("the owner's pod with pool=other and disk=ssd: %s, %v; want %s", got, err, wantAll)
	}
	if got, err := selectorOf(as(c.owner), c.ns, nil); err != nil || got != "" {
		t.Errorf("another team's pod: node selector %s, %v; want none", got, err)
	}
}

// TestNodeSelectorHeld (item 3): without the mutation (an API server
// before Kubernetes 1.36, where install.sh leaves it out), a pod that does
// not carry the TeamSpace's node selector is refused naming the pairs, one
// that carries them is admitted.
func TestNodeSelectorHeld(t *testing.T) {
	alone(t, "it removes the node selector mutation, which every team namespace's pods pass, for a moment")
	newTenantCast(t, "held")
	s := suffix(t, 6)
	owner, name := "owner-"+s, "held-"+s
	createOwned(t, name, ownedBy(with(within(), "objects", shippedMaxObjects, "nodeSelector", map[string]any{"pool": "team-" + s}), owner))
	ns := teamspace.NamespaceName(name)
	mustKubectl(t, "", "delete", "mutatingadmissionpolicybinding", "teamspace-node-selector")
	t.Cleanup(func() { mustKubectl(t, "", "apply", "-f", deployFile(t, "team-use.yaml")) })
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		err = dryRunCreate(t, as(owner), ns, podJSON("p", "registry.invalid/none:1", nil))
		return err != nil
	}) {
		t.Fatal("without the mutation, the owner's pod without the node selector is admitted")
	}
	wantRefusedBy(t, "the owner's pod without the node selector", err, "teamspace-node-selector",
		"Pod "+ns+"/p: spec.nodeSelector must carry pool=team-"+s+": the pods of TeamSpace "+name+" run on the nodes its node selector names")
	wantRefusedBy(t, "the owner's pod with another pool", dryRunCreate(t, as(owner), ns, podJSON("p", "registry.invalid/none:1", map[string]any{"nodeSelector": map[string]any{"pool": "other"}})),
		"teamspace-node-selector", "must carry pool=team-"+s)
	wantAccepted(t, "the owner's pod carrying the node selector", dryRunCreate(t, as(owner), ns, podJSON("p", "registry.invalid/none:1", map[string]any{"nodeSelector": map[string]any{"pool": "team-" + s}})))
}
