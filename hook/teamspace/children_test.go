package teamspace

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// TestChildTypesAreDeclared: the registry, compositecontroller.yaml (what
// the engine watches and sends: the CompositeController's children, the
// quotas' DecoratorController's attachments) and the engine's own keys in
// a recorded request agree, type by type and in order (the copied kinds
// last). A type added to one and not the others fails here, not in a
// cluster.
func TestChildTypesAreDeclared(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "compositecontroller.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	type resource struct {
		APIVersion string `json:"apiVersion"`
		Resource   string `json:"resource"`
	}
	type hook struct {
		Webhook struct {
			URL string `json:"url"`
		} `json:"webhook"`
	}
	var cc, dc, tc, ac struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Resources []struct {
				resource
				LabelSelector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"labelSelector"`
			} `json:"resources"`
			ChildResources []resource `json:"childResources"`
			Attachments    []resource `json:"attachments"`
			Hooks          struct {
				Customize hook `json:"customize"`
				Sync      hook `json:"sync"`
			} `json:"hooks"`
		} `json:"spec"`
	}
	docs := strings.Split(string(raw), "\n---\n")
	if len(docs) != 4 {
		t.Fatalf("compositecontroller.yaml holds %d documents, want the CompositeController and the DecoratorControllers of the quotas, the templates and adopted namespaces", len(docs))
	}
	for i, into := range []any{&cc, &dc, &tc, &ac} {
		if err := yaml.Unmarshal([]byte(docs[i]), into); err != nil {
			t.Fatal(err)
		}
	}
	if dc.Kind != "DecoratorController" || dc.Metadata.Name != QuotasControllerName || !strings.HasSuffix(dc.Spec.Hooks.Sync.Webhook.URL, "/quotas") {
		t.Errorf("the second document is %s %s calling %s, want DecoratorController %s calling /quotas", dc.Kind, dc.Metadata.Name, dc.Spec.Hooks.Sync.Webhook.URL, QuotasControllerName)
	}
	// The templates' bundle: its DecoratorController selects the
	// CompositeController above by its label, and attaches Secrets.
	if tc.Kind != "DecoratorController" || tc.Metadata.Name != TemplatesControllerName ||
		!strings.HasSuffix(tc.Spec.Hooks.Sync.Webhook.URL, "/templates") || !strings.HasSuffix(tc.Spec.Hooks.Customize.Webhook.URL, "/templates/customize") {
		t.Errorf("the third document is %s %s calling %s and %s, want DecoratorController %s calling /templates and /templates/customize",
			tc.Kind, tc.Metadata.Name, tc.Spec.Hooks.Sync.Webhook.URL, tc.Spec.Hooks.Customize.Webhook.URL, TemplatesControllerName)
	}
	if cc.Metadata.Name != ControllerName || cc.Metadata.Labels[v1alpha1.TemplatesBundleLabel] != "true" || len(tc.Spec.Resources) != 1 ||
		tc.Spec.Resources[0].Resource != "compositecontrollers" || tc.Spec.Resources[0].LabelSelector.MatchLabels[v1alpha1.TemplatesBundleLabel] != "true" {
		t.Errorf("%s's parent: %+v, want the CompositeController %s by its label %s=true", TemplatesControllerName, tc.Spec.Resources, ControllerName, v1alpha1.TemplatesBundleLabel)
	}
	// Adopted namespaces: namespaces labelled AdoptLabel, no attachments
	// (and no finalize hook: no finalizer on any namespace).
	if ac.Kind != "DecoratorController" || ac.Metadata.Name != AdoptedControllerName ||
		!strings.HasSuffix(ac.Spec.Hooks.Sync.Webhook.URL, "/adopted") || !strings.HasSuffix(ac.Spec.Hooks.Customize.Webhook.URL, "/adopted/customize") ||
		len(ac.Spec.Resources) != 1 || ac.Spec.Resources[0].Resource != "namespaces" || len(ac.Spec.Attachments) != 0 ||
		strings.Contains(docs[3], "finalize:") || !strings.Contains(docs[3], "{key: "+v1alpha1.AdoptLabel+", operator: Exists}") {
		t.Errorf("the fourth document is %s %s calling %s and %s, want DecoratorController %s of namespaces labelled %s, calling /adopted and /adopted/customize, without attachments or finalize",
			ac.Kind, ac.Metadata.Name, ac.Spec.Hooks.Sync.Webhook.URL, ac.Spec.Hooks.Customize.Webhook.URL, AdoptedControllerName, v1alpha1.AdoptLabel)
	}
	if len(tc.Spec.Attachments) != 1 || tc.Spec.Attachments[0] != (resource{"v1", bundleKind.resource}) {
		t.Errorf("%s's attachments %v, want the Secret alone", TemplatesControllerName, tc.Spec.Attachments)
	}
	type decl struct{ APIVersion, Resource string }
	var declared, registered, attached, viaDecorator []decl
	for _, c := range cc.Spec.ChildResources {
		declared = append(declared, decl(c))
	}
	for _, c := range dc.Spec.Attachments {
		attached = append(attached, decl(c))
	}
	for _, key := range childTypeKeys() {
		ct := childTypeByKey(key)
		gv, err := schema.ParseGroupVersion(ct.apiVersion)
		if err != nil {
			t.Fatalf("%s: %v", ct.kind, err)
		}
		plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(ct.kind))
		if ct.viaDecorator {
			viaDecorator = append(viaDecorator, decl{ct.apiVersion, plural.Resource})
			continue
		}
		registered = append(registered, decl{ct.apiVersion, plural.Resource})
	}
	if diff := cmp.Diff(attached, viaDecorator); diff != "" {
		t.Errorf("the DecoratorController's attachments vs the registry's quotas (-yaml +registry):\n%s", diff)
	}
	// Then the kinds only the platform's copies have (copies.go).
	for _, key := range copyKeys() {
		k := copyKindByKey(key)
		registered = append(registered, decl{k.apiVersion, k.resource})
	}
	if diff := cmp.Diff(declared, registered); diff != "" {
		t.Errorf("compositecontroller.yaml childResources vs the registry (-yaml +registry):\n%s", diff)
	}

	body, err := os.ReadFile(filepath.Join("..", "..", "tests", "testdata", "sync", "recorded-delta-new-parent", "request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	// The recording predates the owners' ClusterRole and binding (#27):
	// every key it has is a registered type's.
	for _, ct := range childTypes {
		delete(r.Children, ct.key)
	}
	for key := range r.Children {
		t.Errorf("the recorded request has children key %q, which no registered type has", key)
	}
}

// TestChildTypesRoundTrip holds every type, for every spec below, to what
// the registry relies on: its answer, read back as the engine shows the
// child, is up to date and is what an invalid spec keeps, also after a hand
// edit; a changed spec that changes its answer makes it out of date; only
// optional types may be left out.
func TestChildTypesRoundTrip(t *testing.T) {
	specs := []string{
		`{"pods": 4}`,
		`{"pods": 3, "cpu": "0.5", "memory": "1Gi", "podSecurity": "restricted", "defaults": {"cpu": "100m"}}`,
		`{"pods": 5, "ephemeralStorage": "10Gi", "objects": {"secrets": 20, "configmaps": 20, "resourcequotas": 2, "services.nodeports": 0}}`,
		`{"pods": 5, "objects": {"services": 3}}`,
		`{"pods": 50, "cpu": "7", "networkIsolation": false, "owners": [{"kind": "User", "name": "ann"}, {"kind": "ServiceAccount", "name": "ci", "namespace": "tools"}]}`,
	}
	other, err := ParseSpec([]byte(`{"pods": 9, "cpu": "3", "memory": "5Gi", "ephemeralStorage": "1Gi", "objects": {"secrets": 5}, "podSecurity": "privileged", "defaults": {"cpu": "1m", "memory": "1Mi"}, "owners": [{"kind": "Group", "name": "devs"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range specs {
		spec, err := ParseSpec([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range childTypes {
			t.Run(ct.kind+" "+raw, func(t *testing.T) {
				desired := ct.desired(mainUnit("alpha", spec), nil)
				if desired == nil {
					if !ct.optional {
						t.Fatalf("not optional, but the spec got none")
					}
					return
				}
				answered, err := json.Marshal(ct.answer(desired))
				if err != nil {
					t.Fatal(err)
				}
				var observed Object
				if err := json.Unmarshal(answered, &observed); err != nil {
					t.Fatal(err)
				}
				if !ct.matches(desired, &observed) {
					t.Errorf("its own answer is not up to date: %s", answered)
				}
				// The engine records what it applied in the annotation.
				observed.Metadata.Annotations = map[string]string{LastAppliedAnnotation: string(answered)}
				kept, err := json.Marshal(ct.answer(ct.kept(mainUnit("alpha", Spec{}), &observed)))
				if err != nil {
					t.Fatal(err)
				}
				if string(kept) != string(answered) {
					t.Errorf("kept while invalid:\n%s\nwant what was applied:\n%s", kept, answered)
				}
				changed := ct.desired(mainUnit("alpha", other), nil)
				if changed == nil {
					return
				}
				b, _ := json.Marshal(ct.answer(changed))
				if string(b) != string(answered) && ct.matches(changed, &observed) {
					t.Errorf("still up to date after the spec changed to %s", b)
				}
				// A hand edit since the engine applied it: what is kept is
				// what was applied, not the edit.
				var edited Object
				if err := json.Unmarshal(b, &edited); err != nil {
					t.Fatal(err)
				}
				edited.Metadata.Annotations = observed.Metadata.Annotations
				if kept, _ := json.Marshal(ct.answer(ct.kept(mainUnit("alpha", Spec{}), &edited))); string(kept) != string(answered) {
					t.Errorf("kept after a hand edit:\n%s\nwant what was applied:\n%s", kept, answered)
				}
			})
		}
	}
}
