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
// defaults' filter); every such list names exactly these, in this order.
func TestObjectKindsAgree(t *testing.T) {
	var want []string
	for _, c := range objectCounts {
		want = append(want, "'"+string(c.name)+"'")
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
			if strings.Join(got, ", ") != strings.Join(want, ", ") {
				t.Errorf("%s lists kinds [%s], want [%s] (objects.go)", f, strings.Join(got, ", "), strings.Join(want, ", "))
			}
		}
	}
}
