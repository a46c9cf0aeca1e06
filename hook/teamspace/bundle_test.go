package teamspace

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// asBundle is r as the engine sends it once every TeamSpace asks for the
// bundle: the templates' keys gone from the related objects, the bundle
// the DecoratorController makes of them in their place.
func asBundle(t *testing.T, r *Request) *Request {
	t.Helper()
	out := *r
	out.Related = map[string]ObjectMap{}
	templates := map[string]ObjectMap{}
	for key, objs := range r.Related {
		if copyKindByKey(key) == nil {
			out.Related[key] = objs
			continue
		}
		templates[key] = objs
	}
	out.Related[bundleKind.key] = ObjectMap{TemplatesNamespace + "/" + TemplatesBundleName: bundleObject(t, templates)}
	return &out
}

// TestTemplatesBundleAnswersAsRelated: every sync and finalize case of the
// golden tests whose request shows templates as related objects, asked
// again with the bundle in their place, gets the same answer.
func TestTemplatesBundleAnswersAsRelated(t *testing.T) {
	compared := 0
	for _, c := range goldenTeamSpaceCases(t) {
		if len(templatesIn(c.req.Related)) == 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			bundled := asBundle(t, &c.req)
			if got := len(templatesIn(bundled.Related)); got != 0 {
				t.Fatalf("%d templates left as related objects", got)
			}
			if diff := cmp.Diff(c.answer(&c.req), c.answer(bundled)); diff != "" {
				t.Errorf("with the bundle, the answer differs (-related +bundle):\n%s", diff)
			}
		})
		compared++
	}
	if compared < 10 {
		t.Errorf("compared %d cases; the golden tests have more with templates", compared)
	}
}

// TestTemplatesBundleUnknown: with no bundle, or one that does not decode,
// the templates are unknown (every copy is kept as it is); an empty one
// is no templates (every copy goes).
func TestTemplatesBundleUnknown(t *testing.T) {
	valid := bundleObject(t, nil)
	cases := []struct {
		name   string
		bundle *Object
		known  bool
	}{
		{name: "no bundle"},
		{name: "empty bundle", bundle: valid, known: true},
		{name: "not base64", bundle: &Object{Data: map[string]string{TemplatesBundleKey: "%%%"}}},
		{name: "not JSON", bundle: &Object{Data: map[string]string{TemplatesBundleKey: base64.StdEncoding.EncodeToString([]byte("{"))}}},
		{name: "null", bundle: &Object{Data: map[string]string{TemplatesBundleKey: base64.StdEncoding.EncodeToString([]byte("null"))}}},
		{name: "no key", bundle: &Object{Data: map[string]string{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Request{Related: map[string]ObjectMap{}}
			if c.bundle != nil {
				r.Related[bundleKind.key] = ObjectMap{TemplatesNamespace + "/" + TemplatesBundleName: c.bundle}
			}
			if _, known := bundleTemplates(r.Related); known != c.known {
				t.Errorf("known = %v, want %v", known, c.known)
			}
		})
	}
}

// TestTemplatesHook: the bundle's DecoratorController is answered for
// the CompositeController of TeamSpaces alone; the bundle holds the
// templates (only those in teamspace-system labelled as templates) and
// too many are refused, naming the size.
func TestTemplatesHook(t *testing.T) {
	ca := templateObject(t, "ConfigMap", "company-ca", "tier=gold", `{"data": {"ca.crt": "PEM"}}`)
	stray := templateObject(t, "ConfigMap", "stray", "", `{"data": {"a": "b"}}`)
	stray.Metadata.Namespace = "default"
	related := map[string]ObjectMap{"ConfigMap.v1": {"teamspace-system/company-ca": ca, "default/stray": stray}}

	if err := (&TemplatesRequest{Object: &Object{APIVersion: "v1", Kind: "Namespace", Metadata: Meta{Name: "teamspace-system"}}}).Validate(); err == nil || !strings.Contains(err.Error(), "CompositeController") {
		t.Errorf("a Namespace parent: %v, want refused", err)
	}
	if got := TemplatesCustomize(&TemplatesRequest{Object: &Object{Kind: "CompositeController", Metadata: Meta{Name: "other"}}}).RelatedResources; len(got) != 0 {
		t.Errorf("customize of another CompositeController: %v, want no rules", got)
	}
	if got := TemplatesCustomize(&TemplatesRequest{Object: controllerObject()}).RelatedResources; len(got) != len(copyKinds) {
		t.Errorf("customize: %d rules, want one per copied kind", len(got))
	}

	r := &Request{Related: map[string]ObjectMap{bundleKind.key: {TemplatesNamespace + "/" + TemplatesBundleName: bundleObject(t, related)}}}
	templates, known := bundleTemplates(r.Related)
	if !known || len(templates) != 1 || templates[0].obj.Metadata.Name != "company-ca" || templates[0].selector.String() != "tier=gold" {
		t.Errorf("bundle holds %v (known %v), want ConfigMap company-ca selecting tier=gold alone", templates, known)
	}

	big := map[string]ObjectMap{"ConfigMap.v1": {}}
	for i := range 3 {
		name := "big-" + string(rune('a'+i))
		big["ConfigMap.v1"]["teamspace-system/"+name] = templateObject(t, "ConfigMap", name, "", `{"data": {"blob": "`+strings.Repeat("x", 400<<10)+`"}}`)
	}
	_, err := Templates(&TemplatesRequest{Object: controllerObject(), Related: big})
	if re, ok := err.(*RequestError); !ok || re.Reason != "TemplatesTooLarge" || !strings.Contains(re.Message, "1048576") {
		t.Errorf("templates over a Secret's size: %v, want TemplatesTooLarge naming the limit", err)
	}
}
