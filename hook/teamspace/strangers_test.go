package teamspace

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWithStrangers(t *testing.T) {
	j := func(s string) any {
		var v any
		if err := json.Unmarshal([]byte(s), &v); err != nil {
			panic(err)
		}
		return v
	}
	for _, c := range []struct {
		name                string
		desired, live, last string
		want                string
		paths               []string
	}{
		{"same", `{"spec":{"podSelector":{}}}`, `{"spec":{"podSelector":{}}}`, `{"spec":{"podSelector":{}}}`,
			`{"spec":{"podSelector":{}}}`, nil},
		{"map key added", `{"spec":{"podSelector":{}}}`, `{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}}}}`, `{"spec":{"podSelector":{}}}`,
			`{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}}}}`, []string{".spec.podSelector.matchLabels"}},
		{"map key added, no last-applied copy", `{"spec":{"podSelector":{}}}`, `{"spec":{"podSelector":{"matchExpressions":[]}}}`, `{}`,
			`{"spec":{"podSelector":{"matchExpressions":[]}}}`, []string{".spec.podSelector.matchExpressions"}},
		{"map key added and recorded: the merge removes it", `{"spec":{"podSelector":{}}}`, `{"spec":{"podSelector":{"matchLabels":{"a":"b"}}}}`, `{"spec":{"podSelector":{"matchLabels":{"a":"b"}}}}`,
			`{"spec":{"podSelector":{}}}`, nil},
		{"map key removed: the merge puts it back", `{"spec":{"hard":{"pods":"4"}}}`, `{"spec":{"hard":{}}}`, `{"spec":{"hard":{"pods":"4"}}}`,
			`{"spec":{"hard":{"pods":"4"}}}`, nil},
		{"scalar changed: the merge puts it back", `{"spec":{"hard":{"pods":"4"}}}`, `{"spec":{"hard":{"pods":"40"}}}`, `{"spec":{"hard":{"pods":"4"}}}`,
			`{"spec":{"hard":{"pods":"4"}}}`, nil},
		{"item added to a list merged by name",
			`{"subjects":[{"kind":"User","name":"ann"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"},{"kind":"User","name":"eve"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"},{"kind":"User","name":"eve"}]}`, []string{".subjects[eve]"}},
		{"item added and recorded",
			`{"subjects":[{"kind":"User","name":"ann"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"},{"kind":"User","name":"eve"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"},{"kind":"User","name":"eve"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"}]}`, nil},
		{"field added inside an item merged by name",
			`{"subjects":[{"kind":"User","name":"ann"}]}`,
			`{"subjects":[{"kind":"User","name":"ann","namespace":"x"}]}`,
			`{"subjects":[{"kind":"User","name":"ann"}]}`,
			`{"subjects":[{"kind":"User","name":"ann","namespace":"x"}]}`, []string{".subjects[ann].namespace"}},
		{"list without a merge key is replaced whole",
			`{"spec":{"ingress":[{"from":[{"podSelector":{}}]}]}}`,
			`{"spec":{"ingress":[{"from":[{"podSelector":{}},{"ipBlock":{"cidr":"0.0.0.0/0"}}]}]}}`,
			`{"spec":{"ingress":[{"from":[{"podSelector":{}}]}]}}`,
			`{"spec":{"ingress":[{"from":[{"podSelector":{}}]}]}}`, nil},
		{"a list that is not live is not looked into", `{"subjects":[{"name":"ann"}]}`, `{}`, `{}`, `{"subjects":[{"name":"ann"}]}`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			desired := j(c.desired)
			got, paths := withStrangers(desired, j(c.live), j(c.last))
			if diff := cmp.Diff(j(c.want), got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.paths, paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(j(c.desired), desired); diff != "" {
				t.Errorf("desired was changed (-before +after):\n%s", diff)
			}
		})
	}
}
