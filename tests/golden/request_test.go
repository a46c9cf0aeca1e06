package golden

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMergePatch(t *testing.T) {
	for _, tc := range []struct {
		name, doc, patch, want string
	}{
		{"replace a scalar", `{"a":1,"b":2}`, `{"a":3}`, `{"a":3,"b":2}`},
		{"null deletes", `{"a":1,"b":2}`, `{"a":null}`, `{"b":2}`},
		{"objects merge deeply", `{"a":{"x":1,"y":2}}`, `{"a":{"y":3,"z":4}}`, `{"a":{"x":1,"y":3,"z":4}}`},
		{"arrays replace", `{"a":[1,2,3]}`, `{"a":[4]}`, `{"a":[4]}`},
		{"object replaces a scalar", `{"a":1}`, `{"a":{"b":null,"c":1}}`, `{"a":{"c":1}}`},
		{"deleting a missing key", `{"a":1}`, `{"b":null}`, `{"a":1}`},
		{"numbers keep their spelling", `{"a":1.50,"b":2}`, `{"c":4.0,"d":1000000000000000000000000000000}`, `{"a":1.50,"b":2,"c":4.0,"d":1000000000000000000000000000000}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := MergePatch([]byte(tc.doc), []byte(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
