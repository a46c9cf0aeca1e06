package teamspace

import (
	"strings"
	"testing"

	"github.com/labhub/teamspace/tests/golden"
)

// TestSpecTable runs the spec table (hook/api/v1alpha1/testdata/specs.json)
// against the hook's validation: every spec the API server accepts (tests/
// cluster TestSpecTable runs the same rows there) ParseSpec accepts, and
// every spec it refuses ParseSpec refuses in one line naming the same field.
func TestSpecTable(t *testing.T) {
	for _, c := range golden.SpecCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			_, err := ParseSpec(c.Spec)
			switch {
			case c.Field == "" && err != nil:
				t.Errorf("ParseSpec(%s): %v; the API server accepts it", c.Spec, err)
			case c.Field != "" && err == nil:
				t.Errorf("ParseSpec(%s) accepted it; the API server refuses it, naming %s", c.Spec, c.Field)
			case c.Field != "" && (!namesField(err.Error(), c.Field) || strings.Contains(err.Error(), "\n")):
				t.Errorf("ParseSpec(%s): %q, want one line naming %s", c.Spec, err, c.Field)
			}
		})
	}
}

// namesField reports whether msg names field as a field path: followed by
// a space, a colon, a dot or an index.
func namesField(msg, field string) bool {
	for _, next := range []string{" ", ":", ".", "["} {
		if strings.HasPrefix(msg, field+next) || strings.Contains(msg, " "+field+next) || strings.Contains(msg, "; "+field+next) {
			return true
		}
	}
	return false
}
