package teamspace

import (
	"encoding/base64"
	"encoding/json"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The templates reach every TeamSpace as one object (issue #55): Secret
// teamspace-system/teamspace-templates, the bundle, which a
// DecoratorController (teamspace-templates in compositecontroller.yaml)
// writes from the templates and every TeamSpace asks for by name.
//
// Why not the templates themselves: the engine matches every change of an
// object of a kind some rule asks for against every TeamSpace's related
// rules (O(TeamSpaces × rules) per event). Four rules of templates, one
// per copied kind, made every NetworkPolicy, RoleBinding and ConfigMap a
// fleet creates (team-isolation, team-owners, kube-root-ca.crt) cost a
// pass over every TeamSpace's six rules: most of the engine's CPU while
// 2000 TeamSpaces are created (docs/design/templates-bundle.md). The bundle's
// DecoratorController has one parent, the CompositeController teamspace,
// so its four rules cost one match per event; every TeamSpace asks for one
// Secret by name.
//
// The TeamSpace's sync reads the templates from the bundle when the
// engine shows it. A request with the four rules' keys (an engine that
// still holds an older customize answer) is read as before; and a bundle
// that is missing or does not decode keeps every copy as it is: nothing in
// a team namespace is deleted because the bundle is late.
const (
	// TemplatesBundleName is the bundle, in TemplatesNamespace.
	TemplatesBundleName = "teamspace-templates"
	// TemplatesBundleKey is the bundle's data key: the templates as JSON.
	TemplatesBundleKey = "templates.json"
	// TemplatesControllerName is the DecoratorController that writes the
	// bundle.
	TemplatesControllerName = "teamspace-templates"
	// ControllerName is the CompositeController of TeamSpaces.
	ControllerName = "teamspace"
	// MaxBundleBytes is the most the templates may take together: what a
	// Secret holds (1 MiB of data).
	MaxBundleBytes = 1 << 20
)

// bundled is one template in the bundle: what a copy is made of (copyOf)
// and what selects the TeamSpaces it goes to.
type bundled struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Name       string            `json:"name"`
	Labels     map[string]string `json:"labels,omitempty"`
	// Selector is the template's TemplateSelectorAnnotation, unparsed:
	// each TeamSpace parses it and says so when it does not parse.
	Selector   string            `json:"selector,omitempty"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string]string `json:"binaryData,omitempty"`
	Type       string            `json:"type,omitempty"`
	Spec       json.RawMessage   `json:"spec,omitempty"`
	RoleRef    json.RawMessage   `json:"roleRef,omitempty"`
	Subjects   json.RawMessage   `json:"subjects,omitempty"`
}

// bundleRule is the related object a TeamSpace's Customize asks for in
// place of the templates.
func bundleRule() RelatedResourceRule {
	return RelatedResourceRule{APIVersion: "v1", Resource: "secrets", Namespace: TemplatesNamespace, Names: []string{TemplatesBundleName}}
}

// templatesIn are the templates among related objects, in kind and name
// order: only those in TemplatesNamespace labelled TemplateLabel=true (a
// related object is that already; a request from elsewhere is not trusted
// to be).
func templatesIn(related map[string]ObjectMap) []*template {
	var out []*template
	for _, k := range copyKinds {
		objs := related[k.key]
		for _, key := range sortedKeys(objs) {
			o := objs[key]
			if o == nil || o.Metadata.Namespace != TemplatesNamespace || o.Metadata.Labels[v1alpha1.TemplateLabel] != "true" || o.Metadata.DeletionTimestamp != nil {
				continue
			}
			out = append(out, newTemplate(k, o))
		}
	}
	return out
}

// newTemplate is template o of kind k with its selector parsed (nil, and
// why, when it does not parse).
func newTemplate(k *copyKind, o *Object) *template {
	t := &template{kind: k, obj: o}
	t.selector, t.err = labels.Parse(o.Metadata.Annotations[v1alpha1.TemplateSelectorAnnotation])
	if t.err != nil {
		t.selector = nil
	}
	return t
}

// encodeBundle is the bundle's content for templates.
func encodeBundle(templates []*template) ([]byte, error) {
	entries := make([]bundled, 0, len(templates))
	for _, t := range templates {
		o := t.obj
		entries = append(entries, bundled{
			APIVersion: t.kind.apiVersion, Kind: t.kind.kind, Name: o.Metadata.Name,
			Labels: o.Metadata.Labels, Selector: o.Metadata.Annotations[v1alpha1.TemplateSelectorAnnotation],
			Data: o.Data, BinaryData: o.BinaryData, Type: o.Type,
			Spec: o.Spec, RoleRef: o.RoleRef, Subjects: o.Subjects,
		})
	}
	return json.Marshal(entries)
}

// decodeBundle reads the templates out of the bundle the engine shows:
// ok is false when there is none or it does not decode (the copies are
// then kept as they are). An entry of a kind not copied is skipped.
func decodeBundle(o *Object) (templates []*template, ok bool) {
	if o == nil || o.Metadata.DeletionTimestamp != nil {
		return nil, false
	}
	raw, err := base64.StdEncoding.DecodeString(o.Data[TemplatesBundleKey])
	if err != nil {
		return nil, false
	}
	var entries []bundled
	if json.Unmarshal(raw, &entries) != nil || entries == nil {
		return nil, false
	}
	for _, e := range entries {
		k := copyKindByKey(e.Kind + "." + e.APIVersion)
		if k == nil || e.Name == "" {
			continue
		}
		obj := &Object{APIVersion: e.APIVersion, Kind: e.Kind,
			Metadata: Meta{Name: e.Name, Namespace: TemplatesNamespace, Labels: e.Labels},
			Data:     e.Data, BinaryData: e.BinaryData, Type: e.Type,
			Spec: e.Spec, RoleRef: e.RoleRef, Subjects: e.Subjects}
		if e.Selector != "" {
			obj.Metadata.Annotations = map[string]string{v1alpha1.TemplateSelectorAnnotation: e.Selector}
		}
		templates = append(templates, newTemplate(k, obj))
	}
	return templates, true
}
