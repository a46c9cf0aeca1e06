package teamspace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Fixtures of the allowance table: alpha and its siblings are TeamSpaces of
// requester alice unless a row says otherwise; minute is the creation time.
func byAlice(o *Meta, minute int) {
	o.Labels = map[string]string{v1alpha1.RequesterLabel: "alice"}
	o.Annotations = map[string]string{v1alpha1.RequestedByAnnotation: "alice"}
	o.CreationTimestamp = metav1.Unix(int64(60*minute), 0)
}

type siblingOpt func(*Object)

func sibling(name string, minute int, spec string, opts ...siblingOpt) *Object {
	o := &Object{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind, Spec: json.RawMessage(spec)}
	o.Metadata.Name, o.Metadata.UID = name, types.UID("uid-"+name)
	byAlice(&o.Metadata, minute)
	for _, f := range opts {
		f(o)
	}
	return o
}

func requestedBy(who string) siblingOpt {
	return func(o *Object) { o.Metadata.Annotations[v1alpha1.RequestedByAnnotation] = who }
}

func unlabelled() siblingOpt {
	return func(o *Object) { delete(o.Metadata.Labels, v1alpha1.RequesterLabel) }
}

func limits(data map[string]string) *Object {
	return &Object{APIVersion: "v1", Kind: "ConfigMap", Metadata: Meta{Name: v1alpha1.LimitsName, Namespace: v1alpha1.SystemNamespace}, Data: data}
}

// allowanceRequest is a sync request for alpha, created at minute 10 by
// alice, with the limits ConfigMap (nil: missing) and the siblings the
// engine shows as related, and the given observed children.
func allowanceRequest(spec string, cm *Object, siblings []*Object, children ...*Object) *Request {
	r := request(spec, nil, children...)
	byAlice(&r.Parent.Metadata, 10)
	if cm != nil {
		r.Related[limitsKey] = ObjectMap{v1alpha1.SystemNamespace + "/" + v1alpha1.LimitsName: cm}
	}
	related := ObjectMap{}
	for _, s := range siblings {
		related[s.Metadata.Name] = s
	}
	// The selector matches alpha itself too: the engine shows it.
	self := sibling("alpha", 10, string(r.Parent.Spec))
	self.Metadata.UID = r.Parent.Metadata.UID
	related["alpha"] = self
	r.Related[teamSpacesKey] = related
	return r
}

func TestAllowance(t *testing.T) {
	const small = `{"pods": 4, "cpu": "500m", "memory": "1Gi"}`
	two := map[string]string{v1alpha1.KeyMaxTeamSpaces: "2"}
	pods10 := map[string]string{v1alpha1.KeyMaxPods: "10"}
	tests := []struct {
		name string
		spec string
		cm   *Object
		sibs []*Object
		// unlabelled: alpha's requester is not counted (exempt).
		unlabelled bool
		children   []*Object
		// wantReason "" means the allowance holds: sync goes on as usual.
		wantReason string
		wantIn     []string
		// wantKinds are the children answered when over.
		wantKinds []string
	}{
		{name: "within: one older, two allowed", spec: small, cm: limits(two),
			sibs: []*Object{sibling("old", 1, small)}},
		{name: "over: two older, two allowed", spec: small, cm: limits(two),
			sibs: []*Object{sibling("old", 1, small), sibling("older", 0, small)}, wantReason: v1alpha1.ReasonAllowanceExceeded,
			wantIn: []string{"beyond the allowance of requester alice (ConfigMap teamspace-system/teamspace-limits): their older TeamSpaces within it hold TeamSpaces 2, pods 8, cpu 1, memory 2Gi; this one would bring", "TeamSpaces 3 > 2 (key maxTeamSpacesPerRequester)", "no namespace until one of them is deleted or the platform raises the allowance"}},
		{name: "newer ones never count against an older one", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("new", 11, small), sibling("newer", 12, small)}},
		{name: "same minute: the name decides", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("aaa", 10, small)}, wantReason: v1alpha1.ReasonAllowanceExceeded, wantIn: []string{"TeamSpaces 2 > 1"}},
		{name: "same minute: a later name does not count", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("zzz", 10, small)}},
		{name: "over: pods total", spec: small, cm: limits(pods10),
			sibs: []*Object{sibling("old", 1, `{"pods": 8, "cpu": "1", "memory": "1Gi"}`)}, wantReason: v1alpha1.ReasonAllowanceExceeded,
			wantIn: []string{"pods 12 > 10 (key maxPodsPerRequester)"}},
		{name: "an older one beyond the allowance is skipped, not counted", spec: small, cm: limits(pods10),
			sibs: []*Object{sibling("big", 1, `{"pods": 12, "memory": "1Gi"}`)}},
		{name: "older ones beyond it are named", spec: `{"pods": 8, "memory": "1Gi"}`, cm: limits(pods10),
			sibs:       []*Object{sibling("big", 1, `{"pods": 12, "memory": "1Gi"}`), sibling("small", 2, `{"pods": 4, "memory": "1Gi"}`)},
			wantReason: v1alpha1.ReasonAllowanceExceeded, wantIn: []string{"pods 12 > 10", "older ones beyond it too: big"}},
		{name: "cpu summed as quantities, at the bound", spec: `{"pods": 1, "cpu": "0.5", "memory": "1Gi"}`, cm: limits(map[string]string{v1alpha1.KeyMaxCPU: "1"}),
			sibs: []*Object{sibling("old", 1, `{"pods": 1, "cpu": "500m", "memory": "1Gi"}`)}},
		{name: "over: cpu, the default 1 counted", spec: `{"pods": 1, "memory": "1Gi"}`, cm: limits(map[string]string{v1alpha1.KeyMaxCPU: "1500m"}),
			sibs: []*Object{sibling("old", 1, `{"pods": 1, "cpu": "0.6", "memory": "1Gi"}`)}, wantReason: v1alpha1.ReasonAllowanceExceeded,
			wantIn: []string{"cpu 1600m > 1500m (key maxCPUPerRequester)"}},
		{name: "over: memory total", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxMemory: "1536Mi"}),
			sibs: []*Object{sibling("old", 1, small)}, wantReason: v1alpha1.ReasonAllowanceExceeded, wantIn: []string{"memory 2Gi > 1536Mi (key maxMemoryPerRequester)"}},
		{name: "over: memory unset is unbounded", spec: `{"pods": 1}`, cm: limits(map[string]string{v1alpha1.KeyMaxMemory: "100Gi"}),
			wantReason: v1alpha1.ReasonAllowanceExceeded, wantIn: []string{"memory unbounded (spec.memory unset) > 100Gi"}},
		{name: "namespaces: a TeamSpace counts once, with its totals, whatever its namespaces",
			spec: `{"pods": 4, "cpu": "500m", "memory": "1Gi", "namespaces": [{"name": "dev", "pods": 1, "cpu": "100m"}, {"name": "prod", "pods": 2, "cpu": "200m"}]}`,
			cm:   limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "2", v1alpha1.KeyMaxPods: "8"}),
			sibs: []*Object{sibling("old", 1, `{"pods": 4, "memory": "1Gi", "namespaces": [{"name": "a", "pods": 1, "cpu": "100m"}, {"name": "b", "pods": 1, "cpu": "100m"}]}`)}},
		{name: "namespaces: the totals are what is over", spec: `{"pods": 5, "memory": "1Gi", "namespaces": [{"name": "dev", "pods": 1, "cpu": "100m"}]}`,
			cm: limits(pods10), sibs: []*Object{sibling("old", 1, `{"pods": 6, "memory": "1Gi", "namespaces": [{"name": "a", "pods": 1, "cpu": "100m"}]}`)},
			wantReason: v1alpha1.ReasonAllowanceExceeded, wantIn: []string{"pods 11 > 10 (key maxPodsPerRequester)"}},
		{name: "another requester of the same label is not counted", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("hers", 1, small, requestedBy("alice@example"))}},
		{name: "an exempt one (no label) is not counted", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("exempt", 1, small, unlabelled())}},
		{name: "a deleting one counts until it is gone", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs:       []*Object{sibling("going", 1, small, func(o *Object) { d := metav1.Unix(999, 0); o.Metadata.DeletionTimestamp = &d })},
			wantReason: v1alpha1.ReasonAllowanceExceeded},
		{name: "an older one with an invalid spec is not counted", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "1"}),
			sibs: []*Object{sibling("bad", 1, `{"pods": 0}`)}},
		{name: "not counted: no requester label", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxTeamSpaces: "0"}), unlabelled: true},
		{name: "keys left out or empty bound nothing", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxPods: " ", "maxPods": "10"}),
			sibs: []*Object{sibling("old", 1, small)}},
		{name: "the ConfigMap missing: nothing new", spec: small, wantReason: v1alpha1.ReasonLimitsInvalid,
			wantIn: []string{"ConfigMap teamspace-system/teamspace-limits is missing", "nothing new is created until the platform restores it"}},
		{name: "a broken key: nothing new, the key named", spec: small, cm: limits(map[string]string{v1alpha1.KeyMaxPods: "ten", v1alpha1.KeyMaxCPU: "-1"}),
			wantReason: v1alpha1.ReasonLimitsInvalid, wantIn: []string{`key maxPodsPerRequester is "ten", not a whole number`, `key maxCPUPerRequester is "-1", not a quantity`}},
		{name: "over with children: kept as they are", spec: `{"pods": 7, "cpu": "500m", "memory": "1Gi"}`, cm: limits(pods10),
			sibs:       []*Object{sibling("old", 1, small)},
			children:   []*Object{namespace(), quota(hardOf(map[string]string{"pods": "4", "requests.cpu": "500m", "requests.memory": "1Gi"}), withLastApplied(`{"spec":{"hard":{"pods":"4","requests.cpu":"500m","requests.memory":"1Gi"}}}`))},
			wantReason: v1alpha1.ReasonAllowanceExceeded, wantKinds: []string{"Namespace", "ResourceQuota pods=4"},
			wantIn: []string{"pods 11 > 10", "keeping what it has as it is: namespace team-alpha, quota pods=4, requests.cpu=500m, requests.memory=1Gi"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := allowanceRequest(tt.spec, tt.cm, tt.sibs, tt.children...)
			if tt.unlabelled {
				delete(r.Parent.Metadata.Labels, v1alpha1.RequesterLabel)
			}
			resp := Sync(r)
			c := resp.Status.Conditions[0]
			over := c.Reason == v1alpha1.ReasonAllowanceExceeded || c.Reason == v1alpha1.ReasonLimitsInvalid
			if tt.wantReason == "" {
				if over {
					t.Fatalf("Ready %s: %s; want the allowance to hold", c.Reason, c.Message)
				}
				return
			}
			if c.Reason != tt.wantReason || c.Status != metav1.ConditionFalse {
				t.Fatalf("Ready %s %s: %s; want False %s", c.Status, c.Reason, c.Message, tt.wantReason)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q\nlacks %q", c.Message, s)
				}
			}
			if diff := cmp.Diff(tt.wantKinds, kindsOf(resp), cmpEmptyAsNil); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
		})
	}
}

var cmpEmptyAsNil = cmp.Transformer("emptyAsNil", func(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
})

// kindsOf names the answered children by kind, a quota with its pods.
func kindsOf(resp *Response) []string {
	var out []string
	for _, c := range resp.Children {
		kind := fmt.Sprint(c["kind"])
		if kind == "ResourceQuota" {
			hard, _ := c["spec"].(map[string]any)["hard"].(map[string]any)
			kind += fmt.Sprintf(" pods=%v", hard["pods"])
		}
		out = append(out, kind)
	}
	return out
}

// TestCustomizeAllowance: a counted TeamSpace asks for the limits
// ConfigMap and its requester's TeamSpaces; an uncounted one does not.
func TestCustomizeAllowance(t *testing.T) {
	r := allowanceRequest(`{"pods": 1}`, nil, nil)
	rules := Customize(r).RelatedResources
	if len(rules) != 5 {
		t.Fatalf("counted: %d rules, want 5 (the last the templates' bundle): %+v", len(rules), rules)
	}
	if got := rules[2]; got.Resource != "configmaps" || got.Namespace != v1alpha1.SystemNamespace || len(got.Names) != 1 || got.Names[0] != v1alpha1.LimitsName {
		t.Errorf("rule 2 = %+v, want the limits ConfigMap by namespace and name", got)
	}
	if got := rules[3]; got.Resource != "teamspaces" || got.LabelSelector == nil || got.LabelSelector.MatchLabels[v1alpha1.RequesterLabel] != "alice" || len(got.Names) != 0 {
		t.Errorf("rule 3 = %+v, want teamspaces by label %s=alice", got, v1alpha1.RequesterLabel)
	}
	delete(r.Parent.Metadata.Labels, v1alpha1.RequesterLabel)
	if rules := Customize(r).RelatedResources; len(rules) != 3 {
		t.Errorf("not counted: %d rules, want 3", len(rules))
	}
}
