package cluster_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/testenv"
	"k8s.io/apimachinery/pkg/labels"
)

// The platform's templates (hack/deploy/templates.yaml, issue #53). Every
// template here is created with --dry-run=server: a stored one would be
// copied by the engine's stand-in into the namespaces of the tests running
// beside these.

// installTemplatesPolicy applies templates.yaml (and the engine's RBAC)
// and waits until the API server enforces it. It stays installed, as in
// every install: it holds only objects with the template label, and the
// engine's writes of ConfigMaps and Secrets, which are its copies.
func installTemplatesPolicy(t *testing.T) {
	t.Helper()
	installOwnerAccess(t)
	testenv.Setup(t, "templates", func() {
		mustKubectl(t, "", "apply", "-f", deployFile(t, "rbac.yaml"), "-f", deployFile(t, "templates.yaml"))
		if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
			err := dryRunCreate(t, nil, "default", templateJSON("ConfigMap", "probe", "", `"data":{"a":"b"}`))
			return err != nil && strings.Contains(err.Error(), "teamspace-templates")
		}) {
			t.Fatal("templates.yaml's teamspace-templates is not enforced 30s after it was applied")
		}
	})
}

// templateJSON is a template of kind (ConfigMap, Secret, NetworkPolicy,
// RoleBinding or any core kind) with the selector annotation unless it is
// "-", and the given content fields.
func templateJSON(kind, name, selector, content string) string {
	api := map[string]string{"NetworkPolicy": "networking.k8s.io/v1", "RoleBinding": "rbac.authorization.k8s.io/v1"}[kind]
	if api == "" {
		api = "v1"
	}
	annotations := ""
	if selector != "-" {
		annotations = fmt.Sprintf(`,"annotations":{%q:%q}`, v1alpha1.TemplateSelectorAnnotation, selector)
	}
	if content != "" {
		content = "," + content
	}
	return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,"labels":{%q:"true"}%s}%s}`,
		api, kind, name, v1alpha1.TemplateLabel, annotations, content)
}

// TestTemplatesRefused: what is not a template the platform copies is
// refused when it is applied, in one line naming why; each kind copied is
// admitted. A platform admin is held too (it is the platform's own input).
func TestTemplatesRefused(t *testing.T) {
	parallel(t)
	installTemplatesPolicy(t)
	const ns = teamspace.TemplatesNamespace
	admitted := map[string]string{
		"a ConfigMap":          templateJSON("ConfigMap", "ca", "-", `"data":{"ca.crt":"x"}`),
		"a pull Secret":        templateJSON("Secret", "pull", "", `"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"e30="}`),
		"a NetworkPolicy":      templateJSON("NetworkPolicy", "allow-ingress", "tier=gold", `"spec":{"podSelector":{},"ingress":[{"from":[{"namespaceSelector":{}}]}]}`),
		"a view RoleBinding":   templateJSON("RoleBinding", "auditors", "-", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"Group","name":"auditors","apiGroup":"rbac.authorization.k8s.io"}]`),
		"an admin RoleBinding": templateJSON("RoleBinding", "sre", "-", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},"subjects":[{"kind":"Group","name":"sre","apiGroup":"rbac.authorization.k8s.io"}]`),
	}
	for what, manifest := range admitted {
		if err := dryRunCreate(t, nil, ns, manifest); err != nil {
			t.Errorf("%s as a template: %v, want admitted", what, err)
		}
	}
	refused := []struct {
		what, namespace, manifest, want string
	}{
		{"a template outside teamspace-system", "default", templateJSON("ConfigMap", "ca", "-", `"data":{}`), "only in namespace teamspace-system"},
		{"a ServiceAccount", ns, templateJSON("ServiceAccount", "bot", "-", ""), "a ServiceAccount is not copied into team namespaces"},
		{"label value yes", ns, strings.Replace(templateJSON("ConfigMap", "ca", "-", ""), `:"true"`, `:"yes"`, 1), `must be "true", not "yes"`},
		{"a selector that does not parse", ns, templateJSON("ConfigMap", "ca", "tier in gold", ""), `"tier in gold" is not a label selector`},
		{"a token Secret", ns, strings.Replace(templateJSON("Secret", "tok", "-", `"type":"kubernetes.io/service-account-token"`), `"labels"`, `"annotations":{"kubernetes.io/service-account.name":"default"},"labels"`, 1), "it cannot be copied"},
		{"a RoleBinding to a Role", ns, templateJSON("RoleBinding", "r", "-", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"view"}`), "not Role view"},
		{"a RoleBinding to cluster-admin", ns, templateJSON("RoleBinding", "r", "-", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"}`), "not ClusterRole cluster-admin"},
		{"NetworkPolicy team-isolation", ns, templateJSON("NetworkPolicy", teamspace.NetworkPolicyName, "-", `"spec":{"podSelector":{}}`), "give the template another name"},
		{"RoleBinding team-owners", ns, templateJSON("RoleBinding", teamspace.RoleBindingName, "-", `"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"}`), "give the template another name"},
	}
	for _, c := range refused {
		wantRefusedBy(t, c.what, dryRunCreate(t, nil, c.namespace, c.manifest), "teamspace-templates", c.want)
	}
	// Taking the label off is always let through (the engine's stand-in
	// here copies no template: a stored one changes no other test).
	cm := "unlabel-" + suffix(t, 6)
	mustKubectl(t, templateJSON("ConfigMap", cm, "-", ""), "-n", ns, "create", "-f", "-")
	deleteOnCleanup(t, "-n", ns, "configmap", cm)
	_, err := kubectl(t, "", "-n", ns, "label", "--overwrite", "configmap", cm, v1alpha1.TemplateLabel+"=yes")
	wantRefusedBy(t, "the label changed to yes", err, "teamspace-templates", `must be "true", not "yes"`)
	if _, err := kubectl(t, "", "-n", ns, "label", "configmap", cm, v1alpha1.TemplateLabel+"-"); err != nil {
		t.Errorf("taking the label off a template: %v", err)
	}
}

// TestTemplateSelectorGrammar: teamspace-templates admits a selector
// exactly when the hook can parse it (apimachinery's labels.Parse, what
// kubectl get -l takes): the policy's grammar neither refuses one the
// hook would copy nor admits one it would report as invalid, for each
// form of requirement.
func TestTemplateSelectorGrammar(t *testing.T) {
	parallel(t)
	installTemplatesPolicy(t)
	selectors := []string{
		"tier=gold", "tier==gold", "tier!=gold", "tier", "!tier", "! tier", "tier=",
		"tier in (gold,silver)", "tier in (gold, silver)", "tier notin (bronze)", "tier in ()",
		"tier=gold,!legacy", "tier=gold, env != dev", " tier = gold ",
		"example.com/tier=gold", "a.b-c_d/e=f", "Tier=Gold", "tier=gold_1.x-2",
		"tier in gold", "tier=gold,", ",tier", "tier==", "=gold", "tier=gold silver",
		"tier=-gold", "tier=gold-", "tier in (gold", "example.com/=x", "/tier=x", "tier>1", "tier<10", "tier > 1", "tier>-1", "tier>a", "tier>=1", "tier in (a,,b)",
		"Example.com/tier=x", "tier=gold=silver",
	}
	for _, sel := range selectors {
		_, parseErr := labels.Parse(sel)
		err := dryRunCreate(t, nil, teamspace.TemplatesNamespace, templateJSON("ConfigMap", "grammar", sel, ""))
		switch {
		case parseErr == nil && err != nil:
			t.Errorf("selector %q parses (labels.Parse) but the policy refuses it: %v", sel, err)
		case parseErr != nil && err == nil:
			t.Errorf("selector %q does not parse (%v) but the policy admits it", sel, parseErr)
		case err != nil && !strings.Contains(err.Error(), "is not a label selector"):
			t.Errorf("selector %q: refused for another reason: %v", sel, err)
		}
	}
}

// TestEngineWritesOnlyCopies: the engine's RBAC lets it write every
// ConfigMap and Secret; teamspace-engine-copies holds it to its copies in
// team namespaces (the TeamSpace label on the namespace and the object),
// and the templates' bundle. A platform admin with every right is not held.
func TestEngineWritesOnlyCopies(t *testing.T) {
	parallel(t)
	installTemplatesPolicy(t)
	c := newTenantCast(t, "copies")
	labelled := func(kind, name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{"name":%q,"labels":{%q:"x"}},"data":{}}`, kind, name, v1alpha1.TeamSpaceLabel)
	}
	plain := func(kind, name string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":%q,"metadata":{"name":%q},"data":{}}`, kind, name)
	}
	engine := as(engineIdentity)
	admins := "wildcard-admins-" + c.owner
	bindRole(t, "cluster-admin", "Group", admins)
	for _, kind := range []string{"ConfigMap", "Secret"} {
		if err := dryRunCreate(t, engine, c.ns, labelled(kind, "copy")); err != nil {
			t.Errorf("the engine's %s copy in %s: %v, want admitted", kind, c.ns, err)
		}
		for _, bad := range []struct{ what, ns, manifest string }{
			{"in kube-system", "kube-system", labelled(kind, "planted")},
			{"in teamspace-system", teamspace.TemplatesNamespace, labelled(kind, "planted")},
			{"in a namespace that is no team's", c.other, labelled(kind, "planted")},
			{"without the TeamSpace label in a team namespace", c.ns, plain(kind, "planted")},
		} {
			wantRefusedBy(t, "the engine's "+kind+" "+bad.what, dryRunCreate(t, engine, bad.ns, bad.manifest), "teamspace-engine-copies", "only as its copies in team namespaces")
		}
		if err := dryRunCreate(t, as("root-"+c.owner, admins), "kube-system", plain(kind, "admins")); err != nil && strings.Contains(err.Error(), "teamspace-engine-copies") {
			t.Errorf("a platform admin is held by teamspace-engine-copies: %v", err)
		}
	}
	// The one exception: the templates' bundle, a Secret of that name in
	// teamspace-system, and nothing else of that name.
	bundle := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"data":{}}`, teamspace.TemplatesBundleName)
	if err := dryRunCreate(t, engine, teamspace.TemplatesNamespace, bundle); err != nil {
		t.Errorf("the engine's templates' bundle: %v, want admitted", err)
	}
	wantRefusedBy(t, "the engine's bundle in kube-system", dryRunCreate(t, engine, "kube-system", bundle), "teamspace-engine-copies", "only as its copies in team namespaces")
	tokenBundle := fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q,"annotations":{"kubernetes.io/service-account.name":"metacontroller"}},"type":"kubernetes.io/service-account-token"}`, teamspace.TemplatesBundleName)
	wantRefusedBy(t, "the engine's bundle as a token Secret", dryRunCreate(t, engine, teamspace.TemplatesNamespace, tokenBundle), "teamspace-engine-copies", "only as its copies in team namespaces")
	wantRefusedBy(t, "the engine's ConfigMap named as the bundle", dryRunCreate(t, engine, teamspace.TemplatesNamespace, plain("ConfigMap", teamspace.TemplatesBundleName)), "teamspace-engine-copies", "only as its copies in team namespaces")
	// A Secret the team made is not the engine's to change or delete.
	mustKubectl(t, "", "-n", c.ns, "create", "secret", "generic", "teams-own", "--from-literal=a=b")
	_, err := kubectl(t, "", append(engine, "-n", c.ns, "delete", "secret", "teams-own", "--dry-run=server")...)
	wantRefusedBy(t, "the engine deleting the team's Secret", err, "teamspace-engine-copies", "only as its copies")
	_, err = kubectl(t, "", append(engine, "-n", c.ns, "label", "secret", "teams-own", "x=y", "--dry-run=server")...)
	wantRefusedBy(t, "the engine changing the team's Secret", err, "teamspace-engine-copies", "only as its copies")
}

// TestImagePullSecretsAdded: with key imagePullSecrets of the limits
// ConfigMap set, every pod created in a team namespace names those pull
// Secrets (the platform's copies) after its own, none twice; a pod in a
// namespace that is no team's, or system:masters', is left as it is, and
// without the key nothing is added.
func TestImagePullSecretsAdded(t *testing.T) {
	alone(t, changesLimits)
	installLimits(t)
	installTemplatesPolicy(t)
	c := newTenantCast(t, "pull")
	pullSecretsOf := func(who []string, namespace string, spec map[string]any) (string, error) {
		return kubectl(t, podJSON("p", "registry.invalid/none:1", spec), append(who, "-n", namespace, "create", "--dry-run=server", "-o", "jsonpath={.spec.imagePullSecrets}", "-f", "-")...)
	}
	if got, err := pullSecretsOf(as(c.owner), c.ns, nil); err != nil || got != "" {
		t.Errorf("without the key: %s, %v; want none added", got, err)
	}
	setLimit(t, "imagePullSecrets", "registry-pull, mirror-pull")
	t.Cleanup(func() { resetLimitsConfig(t) })
	want := `[{"name":"registry-pull"},{"name":"mirror-pull"}]`
	var got string
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		got, err = pullSecretsOf(as(c.owner), c.ns, nil)
		return err == nil && got == want
	}) {
		t.Errorf("the owner's pod naming none: %s, %v; want %s", got, err, want)
	}
	own := map[string]any{"imagePullSecrets": []any{map[string]any{"name": "own"}, map[string]any{"name": "mirror-pull"}}}
	if got, err := pullSecretsOf(as(c.owner), c.ns, own); err != nil || got != `[{"name":"own"},{"name":"mirror-pull"},{"name":"registry-pull"}]` {
		t.Errorf("the owner's pod naming own and mirror-pull: %s, %v; want registry-pull added after them", got, err)
	}
	if got, err := pullSecretsOf(as(c.owner), c.other, nil); err != nil || got != "" {
		t.Errorf("a pod in a namespace that is no team's: %s, %v; want none added", got, err)
	}
	if got, err := pullSecretsOf(nil, c.ns, nil); err != nil || got != "" {
		t.Errorf("system:masters' pod: %s, %v; want none added", got, err)
	}
	// A malformed value is the limits' to name (every requester's new
	// TeamSpace is refused, naming the key).
	setLimit(t, "imagePullSecrets", "Registry_Pull")
	settled(t, within(), `key imagePullSecrets is "Registry_Pull", not a comma-separated list of Secret names`)
}
