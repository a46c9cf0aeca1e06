package teamspace

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestObjectKindsAgree: the kinds spec.objects takes are listed in CEL
// beside objectCounts (crd.yaml's rule, the limits' objectKinds, the
// defaults' filter); every such list names exactly these, in this order,
// or, for the shares of spec.namespaces in crd.yaml, those divided.
func TestObjectKindsAgree(t *testing.T) {
	var want, divided []string
	for _, c := range objectCounts {
		want = append(want, "'"+string(c.name)+"'")
		if !c.whole {
			divided = append(divided, "'"+string(c.name)+"'")
		}
	}
	list := regexp.MustCompile(`\[('configmaps',[^\]]*)\]`)
	for _, f := range []string{"crd.yaml", "hack/deploy/limits.yaml", "hack/deploy/requested-by.yaml"} {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		if err != nil {
			t.Fatal(err)
		}
		// A YAML folded scalar breaks a list across lines.
		found := list.FindAllStringSubmatch(strings.Join(strings.Fields(string(b)), " "), -1)
		if len(found) == 0 {
			t.Errorf("%s lists no object kinds", f)
		}
		for _, m := range found {
			var got []string
			for _, k := range strings.Split(m[1], ",") {
				got = append(got, strings.TrimSpace(k))
			}
			// The shares of spec.namespaces list the divided kinds.
			if g := strings.Join(got, ", "); g != strings.Join(want, ", ") && !(f == "crd.yaml" && g == strings.Join(divided, ", ")) {
				t.Errorf("%s lists kinds [%s], want [%s] (objects.go)", f, g, strings.Join(want, ", "))
			}
		}
	}
}
