package teamspace

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

func TestCheckAllowAndNodes(t *testing.T) {
	cases := []struct {
		name         string
		allow        *v1alpha1.Allow
		nodeSelector map[string]v1alpha1.LabelValue
		want         map[string]string
		problems     []string // each a prefix of one problem
	}{
		{name: "neither", want: nil},
		{name: "allow empty", allow: &v1alpha1.Allow{}, want: nil},
		{
			name: "every list, in spec order",
			allow: &v1alpha1.Allow{
				StorageClasses: []v1alpha1.ClassName{"fast-ssd", "archive"}, PriorityClasses: []v1alpha1.ClassName{"system-cluster-critical"},
				RuntimeClasses: []v1alpha1.ClassName{"kata"}, IngressClasses: []v1alpha1.ClassName{"internal"}, Gateways: []v1alpha1.GatewayName{"infra/public", "shared/*"},
			},
			want: map[string]string{
				"platform.labhub.io/allowed-storage-classes": "fast-ssd,archive", "platform.labhub.io/allowed-priority-classes": "system-cluster-critical",
				"platform.labhub.io/allowed-runtime-classes": "kata", "platform.labhub.io/allowed-ingress-classes": "internal",
				"platform.labhub.io/allowed-gateways": "infra/public,shared/*",
			},
		},
		{
			name:         "node selector sorted by key, empty value kept",
			nodeSelector: map[string]v1alpha1.LabelValue{"zone": "eu-1", "pool": "a", "example.com/gpu": ""},
			want:         map[string]string{v1alpha1.NodeSelectorAnnotation: "example.com/gpu=,pool=a,zone=eu-1"},
		},
		{
			name:     "a class that is no DNS name",
			allow:    &v1alpha1.Allow{StorageClasses: []v1alpha1.ClassName{"ok", "Fast_SSD"}},
			problems: []string{`spec.allow.storageClasses[1] "Fast_SSD": a lowercase RFC 1123 subdomain`},
		},
		{
			name:     "a class named twice",
			allow:    &v1alpha1.Allow{RuntimeClasses: []v1alpha1.ClassName{"kata", "kata"}},
			problems: []string{`spec.allow.runtimeClasses[1] "kata": named twice`},
		},
		{
			name:     "gateways without a namespace, or of a bad one",
			allow:    &v1alpha1.Allow{Gateways: []v1alpha1.GatewayName{"public", "Infra/x"}},
			problems: []string{`spec.allow.gateways[0] "public": must be <namespace>/<name>`, `spec.allow.gateways[1] "Infra/x": a lowercase RFC 1123 label`},
		},
		{
			name:         "a node selector key and value that are no label's",
			nodeSelector: map[string]v1alpha1.LabelValue{"bad key": "x", "pool": "a b"},
			problems:     []string{`spec.nodeSelector.bad key "x": name part must consist`, `spec.nodeSelector.pool "a b": a valid label must be`},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, problems := checkAllowAndNodes(c.allow, c.nodeSelector)
			if len(c.problems) > 0 {
				if len(problems) != len(c.problems) {
					t.Fatalf("problems %q, want %d starting %q", problems, len(c.problems), c.problems)
				}
				for i, p := range c.problems {
					if !strings.HasPrefix(problems[i], p) {
						t.Errorf("problem %d: %q, want it to start %q", i, problems[i], p)
					}
				}
				return
			}
			if len(problems) > 0 {
				t.Fatalf("problems %q, want none", problems)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
