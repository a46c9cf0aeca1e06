package teamspace

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"sigs.k8s.io/yaml"
)

// crdSchema is crd.yaml's openAPIV3Schema (generated from hook/api by
// hack/generate.sh; hack/test.sh's verify step keeps it current).
func crdSchema(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd map[string]any
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	return at(t, crd, "spec", "versions", 0, "schema", "openAPIV3Schema").(map[string]any)
}

// at walks v by map keys and list indices.
func at(t *testing.T, v any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				t.Fatalf("schema: %v at %q is not an object", path, k)
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				t.Fatalf("schema: %v at %d is not a list that long", path, k)
			}
			v = l[k]
		}
	}
	return v
}

// TestSchemaBounds: the numbers and defaults the hook checks against are
// the schema's (the markers in hook/api/v1alpha1 spell them; a marker
// cannot name a Go constant), and the hook decodes every field the schema
// has, each with its wrong-type message.
func TestSchemaBounds(t *testing.T) {
	schema := crdSchema(t)
	spec := func(path ...any) any {
		return at(t, schema, append([]any{"properties", "spec", "properties"}, path...)...)
	}
	num := func(v any) string { return fmt.Sprint(v) }
	checks := []struct {
		what      string
		got, want string
	}{
		{"spec.pods minimum", num(spec("pods", "minimum")), num(MinPods)},
		{"spec.pods maximum", num(spec("pods", "maximum")), num(MaxPods)},
		{"spec.cpu default", num(spec("cpu", "default")), DefaultCPU},
		{"spec.podSecurity default", num(spec("podSecurity", "default")), DefaultPodSecurity},
		{"spec.podSecurity enum", num(spec("podSecurity", "enum")), num(podSecurityNames())},
		{"spec.owners maxItems", num(spec("owners", "maxItems")), num(MaxOwners)},
		{"spec.objects count maximum", num(spec("objects", "additionalProperties", "maximum")), num(MaxObjectCount)},
		{"spec.objects maxProperties", num(spec("objects", "maxProperties")), num(len(objectCounts))},
		{"metadata.name rule", fmt.Sprint(strings.Contains(num(at(t, schema, "x-kubernetes-validations", 0, "rule")), fmt.Sprintf("size() <= %d", MaxNameLength))), "true"},
		{"MaxNameLength", num(v1alpha1.MaxNameLength), num(MaxNameLength)},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s: crd.yaml has %s, the hook %s", c.what, c.got, c.want)
		}
	}

	var inSchema, inType []string
	for name := range spec().(map[string]any) {
		inSchema = append(inSchema, name)
	}
	typ := reflect.TypeFor[v1alpha1.TeamSpaceSpec]()
	for i := range typ.NumField() {
		name := jsonName(typ.Field(i))
		inType = append(inType, name)
		if wrongType[name] == "" {
			t.Errorf("wrongType has no message for spec.%s", name)
		}
		if typ.Field(i).Type.Kind() == reflect.Map && wrongType[name+".*"] == "" {
			t.Errorf("wrongType has no message for the values of spec.%s", name)
		}
	}
	slices.Sort(inSchema)
	slices.Sort(inType)
	if diff := cmp.Diff(inSchema, inType); diff != "" {
		t.Errorf("spec fields of crd.yaml (-) and of v1alpha1.TeamSpaceSpec (+): regenerate crd.yaml (hack/generate.sh)\n%s", diff)
	}
}
