package v1alpha1_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestEveryFieldDescribed: what `kubectl explain teamspace.spec` and
// `.status` print comes from the comments on these types (crd.yaml is
// generated from them). Every field of spec and status has a description;
// one with a default names it ("Default"), one with bounds names them.
// Condition's own fields are metav1's.
func TestEveryFieldDescribed(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "..", "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema["properties"].(map[string]any)
	n := 0
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		n++
		desc, _ := s["description"].(string)
		if strings.TrimSpace(desc) == "" {
			t.Errorf("%s has no description", path)
		}
		if d, ok := s["default"]; ok && !strings.Contains(desc, "Default") && !strings.Contains(desc, "Until then") {
			t.Errorf("%s defaults to %v but its description does not say so: %q", path, d, desc)
		}
		for _, bound := range []string{"maximum", "maxItems"} {
			if v, ok := s[bound]; ok && !strings.Contains(desc, fmt.Sprint(v)) {
				t.Errorf("%s has %s %v but its description does not name it: %q", path, bound, v, desc)
			}
		}
		if path == "status.conditions" {
			return
		}
		props, _ := s["properties"].(map[string]any)
		keys := make([]string, 0, len(props))
		for k := range props {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walk(path+"."+k, props[k].(map[string]any))
		}
		if items, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", items)
		}
		if values, ok := s["additionalProperties"].(map[string]any); ok {
			walk(path+".*", values)
		}
	}
	walk("spec", root["spec"].(map[string]any))
	walk("status", root["status"].(map[string]any))
	if n < 20 {
		t.Errorf("walked %d fields, want every field of spec and status", n)
	}
}
