package teamspace

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// templateObject is a template of the platform's as the engine shows it
// (a related object): kind, name, the selector annotation if not "" and
// its content fields (JSON).
func templateObject(t *testing.T, kind, name, selector, content string) *Object {
	t.Helper()
	k := copyKindOf(t, kind)
	o := &Object{}
	if err := json.Unmarshal([]byte(content), o); err != nil {
		t.Fatal(err)
	}
	o.APIVersion, o.Kind = k.apiVersion, kind
	o.Metadata = Meta{Name: name, Namespace: TemplatesNamespace, Labels: map[string]string{v1alpha1.TemplateLabel: "true", "app": "platform"}}
	if selector != "" {
		o.Metadata.Annotations = map[string]string{v1alpha1.TemplateSelectorAnnotation: selector}
	}
	return o
}

func copyKindOf(t *testing.T, kind string) *copyKind {
	for _, k := range copyKinds {
		if k.kind == kind {
			return k
		}
	}
	t.Fatalf("no copied kind %s", kind)
	return nil
}

// withTemplates adds templates to r's bundle, made as the bundle's
// DecoratorController makes it (Templates).
func withTemplates(t *testing.T, r *Request, templates ...*Object) *Request {
	t.Helper()
	related := map[string]ObjectMap{}
	add := func(o *Object) {
		k := copyKindOf(t, o.Kind)
		if related[k.key] == nil {
			related[k.key] = ObjectMap{}
		}
		related[k.key][TemplatesNamespace+"/"+o.Metadata.Name] = o
	}
	if before, ok := bundleTemplates(r.Related); ok {
		for _, tm := range before {
			add(tm.obj)
		}
	}
	for _, o := range templates {
		add(o)
	}
	r.Related[bundleKind.key] = ObjectMap{TemplatesNamespace + "/" + TemplatesBundleName: bundleObject(t, related)}
	return r
}

// bundleObject is the bundle of the templates among related, as the
// engine would show it.
func bundleObject(t *testing.T, related map[string]ObjectMap) *Object {
	t.Helper()
	resp, err := Templates(&TemplatesRequest{Object: controllerObject(), Related: related})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(resp.Attachments[0])
	if err != nil {
		t.Fatal(err)
	}
	o := &Object{}
	if err := json.Unmarshal(raw, o); err != nil {
		t.Fatal(err)
	}
	return o
}

func controllerObject() *Object {
	return &Object{APIVersion: "metacontroller.k8s.io/v1alpha1", Kind: "CompositeController", Metadata: Meta{Name: ControllerName}}
}

// withChild adds an observed child under the engine's key.
func withChild(r *Request, key string, o *Object) {
	if r.Children[key] == nil {
		r.Children[key] = ObjectMap{}
	}
	r.Children[key][o.Metadata.Namespace+"/"+o.Metadata.Name] = o
}

// copiesIn are the answered children that are copies (not the registry's).
func copiesIn(resp *Response) []map[string]any {
	var out []map[string]any
	for _, c := range resp.Children {
		k := copyKindByKey(c["kind"].(string) + "." + c["apiVersion"].(string))
		md := c["metadata"].(map[string]any)
		if k != nil && !ownName(k, md["name"].(string), &unit{teamspace: "alpha", namespace: md["namespace"].(string)}) {
			out = append(out, c)
		}
	}
	return out
}

// observedAs is an answered child as the engine then shows it: created
// with the answer as its last-applied copy and its selector label.
func observedAs(t *testing.T, answer map[string]any) *Object {
	t.Helper()
	raw, err := json.Marshal(answer)
	if err != nil {
		t.Fatal(err)
	}
	o := &Object{}
	if err := json.Unmarshal(raw, o); err != nil {
		t.Fatal(err)
	}
	o.Metadata.Labels["controller-uid"] = "uid-alpha"
	o.Metadata.Annotations = map[string]string{LastAppliedAnnotation: string(raw)}
	return o
}

// TestCopiesRoundTrip holds each copied kind to what the engine needs: a
// template's copy, read back as the engine shows it, is answered again the
// same (nothing churns) with nothing in status.templates; an invalid spec
// keeps it as it is; a template gone takes it away; team-objects counts
// the copies of its kinds on top of the spec's.
func TestCopiesRoundTrip(t *testing.T) {
	const spec = `{"pods": 4, "cpu": "0.5", "objects": {"configmaps": 10, "secrets": 5}}`
	cases := []struct {
		name, kind, content string
		counted             string
	}{
		{"ConfigMap with data and binaryData", "ConfigMap", `{"data":{"ca.crt":"PEM"},"binaryData":{"logo":"AAEC"}}`, "configmaps"},
		{"pull Secret", "Secret", `{"type":"kubernetes.io/dockerconfigjson","data":{".dockerconfigjson":"e30="}}`, "secrets"},
		{"NetworkPolicy", "NetworkPolicy", `{"spec":{"podSelector":{},"policyTypes":["Ingress"],"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"ingress"}}}]}]}}`, ""},
		{"RoleBinding", "RoleBinding", `{"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"auditors"}]}`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tmpl := templateObject(t, c.kind, "platform-thing", "", c.content)
			steady := []*Object{namespace(), quota(hard("4", "500m")), limitRange("125m"), networkPolicy(isolated)}
			first := Sync(withTemplates(t, request(spec, nil, steady...), tmpl))
			copies := copiesIn(first)
			if len(copies) != 1 {
				t.Fatalf("copies answered: %v, want one", copies)
			}
			if len(first.Status.Templates) != 1 || first.Status.Templates[0].Reason != TemplateNotCopied {
				t.Errorf("status.templates before the copy is there: %+v, want one NotCopied", first.Status.Templates)
			}
			if got := copies[0]["metadata"].(map[string]any)["labels"]; !cmp.Equal(got, map[string]any{v1alpha1.TeamSpaceLabel: "alpha", "app": "platform"}) {
				t.Errorf("copy labels %v, want the template's without %s, with the TeamSpace's", got, v1alpha1.TemplateLabel)
			}
			objects := func(resp *Response) map[string]any {
				for _, ch := range resp.Children {
					if ch["kind"] == "ResourceQuota" && ch["metadata"].(map[string]any)["name"] == ObjectsQuotaName {
						return ch["spec"].(map[string]any)["hard"].(map[string]any)
					}
				}
				return nil
			}
			wantCM, wantSecrets := "10", "5"
			switch c.counted {
			case "configmaps":
				wantCM = "11"
			case "secrets":
				wantSecrets = "6"
			}
			if hard := objects(first); hard["configmaps"] != wantCM || hard["secrets"] != wantSecrets {
				t.Errorf("team-objects %v, want configmaps=%s secrets=%s", hard, wantCM, wantSecrets)
			}

			observed := observedAs(t, copies[0])
			r := withTemplates(t, request(spec, nil, steady...), tmpl)
			withChild(r, copyKindOf(t, c.kind).key, observed)
			second := Sync(r)
			if diff := cmp.Diff(copies, copiesIn(second)); diff != "" {
				t.Errorf("copy answered again, once observed (-first +second):\n%s", diff)
			}
			if len(second.Status.Templates) != 0 {
				t.Errorf("status.templates with the copy there: %+v, want none", second.Status.Templates)
			}

			invalid := withTemplates(t, request(`{"pods": 0}`, nil, steady...), tmpl)
			withChild(invalid, copyKindOf(t, c.kind).key, observed)
			if diff := cmp.Diff(copies, copiesIn(Sync(invalid))); diff != "" {
				t.Errorf("copy kept while the spec is invalid (-want +got):\n%s", diff)
			}

			gone := withTemplates(t, request(spec, nil, steady...))
			withChild(gone, copyKindOf(t, c.kind).key, observed)
			if got := copiesIn(Sync(gone)); len(got) != 0 {
				t.Errorf("copies answered without a template: %v, want none (the engine deletes it)", got)
			}

			// No bundle at all (its DecoratorController late or gone):
			// the copy stays as it is.
			unknown := request(spec, nil, steady...)
			withChild(unknown, copyKindOf(t, c.kind).key, observed)
			kept := Sync(unknown)
			if diff := cmp.Diff(copies, copiesIn(kept)); diff != "" {
				t.Errorf("copy kept without a bundle (-want +got):\n%s", diff)
			}
			if hard := objects(kept); hard["configmaps"] != wantCM || hard["secrets"] != wantSecrets {
				t.Errorf("team-objects without a bundle %v, want configmaps=%s secrets=%s (the copies kept still counted)", hard, wantCM, wantSecrets)
			}
		})
	}
}

// TestTemplateSelection: which TeamSpaces a template's selector picks, by
// their labels; a selector that does not parse picks none and is named.
func TestTemplateSelection(t *testing.T) {
	cases := []struct {
		name     string
		selector string
		labels   map[string]string
		copied   bool
		invalid  bool
	}{
		{name: "no selector: every TeamSpace", copied: true},
		{name: "equality, matching", selector: "tier=gold", labels: map[string]string{"tier": "gold"}, copied: true},
		{name: "equality, another value", selector: "tier=gold", labels: map[string]string{"tier": "silver"}},
		{name: "equality, unlabelled", selector: "tier=gold"},
		{name: "set, in", selector: "tier in (gold,silver)", labels: map[string]string{"tier": "silver"}, copied: true},
		{name: "set, notin an unlabelled TeamSpace", selector: "tier notin (bronze)", copied: true},
		{name: "does not exist", selector: "!legacy", labels: map[string]string{"legacy": "yes"}},
		{name: "exists", selector: "legacy", labels: map[string]string{"legacy": "yes"}, copied: true},
		{name: "does not parse", selector: "tier in gold", labels: map[string]string{"tier": "gold"}, invalid: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := withTemplates(t, request(`{"pods": 4}`, nil, namespace()), templateObject(t, "ConfigMap", "endpoints", c.selector, `{"data":{"a":"b"}}`))
			r.Parent.Metadata.Labels = c.labels
			resp := Sync(r)
			if got := len(copiesIn(resp)) == 1; got != c.copied {
				t.Errorf("copied = %v, want %v", got, c.copied)
			}
			invalid := len(resp.Status.Templates) > 0 && resp.Status.Templates[0].Reason == TemplateInvalidSelector
			if invalid != c.invalid {
				t.Errorf("status.templates %+v, InvalidSelector want %v", resp.Status.Templates, c.invalid)
			}
		})
	}
}

// TestCopiesCountsAsked: team-objects' counts raised by the copies are as
// asked anywhere between the copies there and the copies asked for, so a
// template added or removed does not make the TeamSpace out of date for
// the pass in which its copies come or go (nor where the team's own
// object holds a copy's name); a count outside that is out of date. The
// answer always carries the count with every copy asked for.
func TestCopiesCountsAsked(t *testing.T) {
	const spec = `{"pods": 4, "cpu": "0.5", "objects": {"configmaps": 10, "secrets": 5}}`
	tmpl := templateObject(t, "ConfigMap", "ca", "", `{"data":{"ca.crt":"PEM"}}`)
	objects := func(cm string) *Object {
		return inside("ResourceQuota", ObjectsQuotaName, "", hardOf(map[string]string{"configmaps": cm, "secrets": "5"}))
	}
	copyOfCA := func(t *testing.T) *Object {
		resp := Sync(withTemplates(t, request(spec, nil, namespace()), tmpl))
		return observedAs(t, copiesIn(resp)[0])
	}
	cases := []struct {
		name       string
		template   bool
		copyThere  bool
		observedCM string
		wantReason string
		wantCM     string
	}{
		{name: "template added: count not raised yet", template: true, observedCM: "10", wantReason: v1alpha1.ReasonReady, wantCM: "11"},
		{name: "copy there, count raised", template: true, copyThere: true, observedCM: "11", wantReason: v1alpha1.ReasonReady, wantCM: "11"},
		{name: "copy there, count not raised yet (a hand edit)", template: true, copyThere: true, observedCM: "10", wantReason: v1alpha1.ReasonQuotaOutOfDate, wantCM: "11"},
		{name: "template gone, its copy still there", copyThere: true, observedCM: "11", wantReason: v1alpha1.ReasonReady, wantCM: "10"},
		{name: "template gone, copy gone, count still raised", observedCM: "11", wantReason: v1alpha1.ReasonQuotaOutOfDate, wantCM: "10"},
		{name: "the team's object holds the name: count raised, no copy", template: true, observedCM: "11", wantReason: v1alpha1.ReasonReady, wantCM: "11"},
		{name: "count above the copies asked", template: true, observedCM: "12", wantReason: v1alpha1.ReasonQuotaOutOfDate, wantCM: "11"},
		{name: "count below the spec", template: true, observedCM: "9", wantReason: v1alpha1.ReasonQuotaOutOfDate, wantCM: "11"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := request(spec, nil, namespace(), quota(hard("4", "500m")), objects(c.observedCM), limitRange("125m"), networkPolicy(isolated))
			if c.template {
				withTemplates(t, r, tmpl)
			} else {
				withTemplates(t, r)
			}
			if c.copyThere {
				withChild(r, "ConfigMap.v1", copyOfCA(t))
			}
			resp := Sync(r)
			if got := resp.Status.Conditions[0].Reason; got != c.wantReason {
				t.Errorf("Ready reason %s (%s), want %s", got, resp.Status.Conditions[0].Message, c.wantReason)
			}
			for _, ch := range resp.Children {
				if ch["kind"] == "ResourceQuota" && ch["metadata"].(map[string]any)["name"] == ObjectsQuotaName {
					if got := ch["spec"].(map[string]any)["hard"].(map[string]any)["configmaps"]; got != c.wantCM {
						t.Errorf("team-objects answered configmaps=%v, want %s", got, c.wantCM)
					}
				}
			}
		})
	}
}
