package cluster_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
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
