package teamspace

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func TestParseSpecNamespaces(t *testing.T) {
	cases := []struct {
		name     string
		spec     string
		want     []NamespaceShare
		problems []string // each a substring of the error, in order
	}{
		{name: "none", spec: `{"pods":4}`},
		{name: "empty", spec: `{"pods":4,"namespaces":[]}`},
		{
			name: "shares in canonical form, in spec order",
			spec: `{"pods":4,"cpu":"2","memory":"4Gi","objects":{"secrets":20,"configmaps":5},"namespaces":[` +
				`{"name":"prod","pods":2,"cpu":"1.0","memory":"2048Mi","objects":{"secrets":15,"configmaps":3}},` +
				`{"name":"dev","pods":1,"cpu":"0.5","memory":"1Gi","objects":{"secrets":5,"configmaps":1}}]}`,
			want: []NamespaceShare{
				{Name: "prod", Pods: "2", CPU: "1", Memory: "2Gi", Objects: map[corev1.ResourceName]int64{"secrets": 15, "configmaps": 3}},
				{Name: "dev", Pods: "1", CPU: "500m", Memory: "1Gi", Objects: map[corev1.ResourceName]int64{"secrets": 5, "configmaps": 1}},
			},
		},
		{
			name:     "exact sums: 0.1 + 0.2 is 0.3",
			spec:     `{"pods":4,"cpu":"0.3","namespaces":[{"name":"a","pods":1,"cpu":"0.1"},{"name":"b","pods":1,"cpu":"0.2"}]}`,
			problems: []string{"spec.namespaces: the namespaces' cpu add up to 300m, not less than spec.cpu 300m"},
		},
		{
			name:     "pods adding up to the total",
			spec:     `{"pods":4,"namespaces":[{"name":"a","pods":2,"cpu":"100m"},{"name":"b","pods":2,"cpu":"100m"}]}`,
			problems: []string{"spec.namespaces: the namespaces' pods add up to 4, not less than spec.pods 4"},
		},
		{
			name:     "memory share without spec.memory",
			spec:     `{"pods":4,"namespaces":[{"name":"a","pods":1,"cpu":"100m","memory":"1Gi"}]}`,
			problems: []string{"spec.namespaces[0].memory is a share of spec.memory, which is unset"},
		},
		{
			name: "shares left out of memory and objects (an equal part of the rest)",
			spec: `{"pods":4,"memory":"4Gi","objects":{"secrets":20,"configmaps":3},"namespaces":[{"name":"a","pods":1,"cpu":"100m"},{"name":"b","pods":1,"cpu":"100m","memory":"1Gi","objects":{"configmaps":1}}]}`,
			want: []NamespaceShare{
				{Name: "a", Pods: "1", CPU: "100m"},
				{Name: "b", Pods: "1", CPU: "100m", Memory: "1Gi", Objects: map[corev1.ResourceName]int64{"configmaps": 1}},
			},
		},
		{
			name:     "objects of a kind spec.objects does not keep",
			spec:     `{"pods":4,"objects":{"secrets":20},"namespaces":[{"name":"a","pods":1,"cpu":"100m","objects":{"configmaps":5}}]}`,
			problems: []string{"spec.namespaces[0].objects.configmaps is a share of a count spec.objects does not keep"},
		},
		{
			name: "the platform's default counts (the namespaces' own ConfigMaps come on top)",
			spec: `{"pods":4,"objects":{"configmaps":50,"resourcequotas":3},"namespaces":[{"name":"a","pods":1,"cpu":"100m"},{"name":"b","pods":1,"cpu":"100m","objects":{"configmaps":0}}]}`,
			want: []NamespaceShare{
				{Name: "a", Pods: "1", CPU: "100m"},
				{Name: "b", Pods: "1", CPU: "100m", Objects: map[corev1.ResourceName]int64{"configmaps": 0}},
			},
		},
		{
			name:     "objects leaving team-<name> less than its ConfigMap",
			spec:     `{"pods":4,"objects":{"configmaps":4},"namespaces":[{"name":"a","pods":1,"cpu":"100m","objects":{"configmaps":4}}]}`,
			problems: []string{"spec.namespaces: the namespaces' objects.configmaps add up to 4, more than spec.objects.configmaps 4 less the 1 team-<name> holds itself"},
		},
		{
			name:     "a share of resourcequotas, which is not divided",
			spec:     `{"pods":4,"objects":{"resourcequotas":3},"namespaces":[{"name":"a","pods":1,"cpu":"100m","objects":{"resourcequotas":1}}]}`,
			problems: []string{"spec.namespaces[0].objects.resourcequotas is not divided: every namespace holds spec.objects.resourcequotas"},
		},
		{
			name:     "names: --, upper case, twice",
			spec:     `{"pods":9,"namespaces":[{"name":"b--c","pods":1,"cpu":"1m"},{"name":"Dev","pods":1,"cpu":"1m"},{"name":"x","pods":1,"cpu":"1m"},{"name":"x","pods":1,"cpu":"1m"}]}`,
			problems: []string{`spec.namespaces[0].name "b--c" must be a DNS-1123 label`, `spec.namespaces[1].name "Dev" must be`, `spec.namespaces[3].name "x" is named twice`},
		},
		{
			name:     "sums are not checked against an invalid total",
			spec:     `{"pods":4,"cpu":"lots","namespaces":[{"name":"a","pods":9,"cpu":"100m"}]}`,
			problems: []string{`spec.cpu "lots" is not a quantity`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec, err := ParseSpec(json.RawMessage(c.spec))
			if len(c.problems) > 0 {
				if err == nil {
					t.Fatalf("ParseSpec accepted it, want %q", c.problems)
				}
				msg := err.Error()
				for _, p := range c.problems {
					i := strings.Index(msg, p)
					if i < 0 {
						t.Fatalf("error %q, want it to say %q (in order)", err, p)
					}
					msg = msg[i+len(p):]
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, spec.Namespaces); diff != "" {
				t.Errorf("shares (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExtraNamespaceNames(t *testing.T) {
	// TeamSpace a with entry b-c and TeamSpace a-b with entry c: two
	// namespaces, never one (the example).
	if x, y := ExtraNamespaceName("a", "b-c"), ExtraNamespaceName("a-b", "c"); x == y {
		t.Errorf("both are %s", x)
	}
	if got := checkNamespaceNames("delta", []NamespaceShare{{Name: strings.Repeat("a", 51)}, {Name: strings.Repeat("a", 52)}}); len(got) != 1 || !strings.HasPrefix(got[0], "spec.namespaces[1].name: namespace team-delta--") {
		t.Errorf("checkNamespaceNames: %q, want only entry 1 (5 + 5 + 2 + 52 = 64 characters)", got)
	}
}
