package e2e

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/labhub/teamspace/tests/watchtiming"
)

// ownedChild is one child of alpha and the fields the hook owns in it,
// as paths into the object (a label of the namespace is a path too).
type ownedChild struct {
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	owned     [][]string
}

// ownedEdit is a hand edit of one owned field: it adds something inside
// it, narrows it or removes it (a JSON merge patch, or a JSON patch when it
// is a list; applied by the admin).
type ownedEdit struct {
	child, what, patch string
}

// stepOwnedFields: for every child type of alpha (which has owners and
// isolation by now) and every field the hook owns in it, a hand edit that
// adds, narrows or removes something there is reverted by the real engine
// within a second: also what the engine's 3-way merge alone keeps (a key
// added inside an owned map, a subject added to a binding), which the hook
// has the engine record and then drop (hook/teamspace/strangers.go).
func stepOwnedFields(t *testing.T, w *walk) {
	const ns = "team-alpha"
	rbac := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: r}
	}
	children := map[string]ownedChild{
		"namespace": {schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", ns,
			[][]string{{"metadata", "labels", "pod-security.kubernetes.io/enforce"}, {"metadata", "labels", "pod-security.kubernetes.io/enforce-version"}, {"metadata", "labels", "platform.labhub.io/teamspace"}}},
		"quota":          {schema.GroupVersionResource{Version: "v1", Resource: "resourcequotas"}, ns, quotaName, [][]string{{"spec", "hard", "pods"}, {"spec", "hard", "requests.cpu"}, {"spec", "hard", "requests.memory"}}},
		"limitrange":     {schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}, ns, "team-defaults", [][]string{{"spec"}}},
		"rolebinding":    {rbac("rolebindings"), ns, "team-owners", [][]string{{"roleRef"}, {"subjects"}}},
		"networkpolicy":  {schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}, ns, "team-isolation", [][]string{{"spec", "podSelector"}, {"spec", "policyTypes"}, {"spec", "ingress"}}},
		"clusterrole":    {rbac("clusterroles"), "", "teamspace-owner-alpha", [][]string{{"rules"}}},
		"clusterbinding": {rbac("clusterrolebindings"), "", "teamspace-owner-alpha", [][]string{{"subjects"}}},
	}
	edits := []ownedEdit{
		{"namespace", "enforce label weakened", `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"privileged"}}}`},
		{"namespace", "enforce label removed", `{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null}}}`},
		{"namespace", "TeamSpace label removed", `{"metadata":{"labels":{"platform.labhub.io/teamspace":null}}}`},
		{"quota", "pods raised", `{"spec":{"hard":{"pods":"50"}}}`},
		{"quota", "requests.cpu removed", `{"spec":{"hard":{"requests.cpu":null}}}`},
		{"limitrange", "a max added to the item", `[{"op":"add","path":"/spec/limits/0/max","value":{"cpu":"64"}}]`},
		{"limitrange", "the default request removed", `[{"op":"remove","path":"/spec/limits/0/defaultRequest"}]`},
		{"limitrange", "an item added", `[{"op":"add","path":"/spec/limits/-","value":{"type":"Pod","max":{"cpu":"64"}}}]`},
		{"networkpolicy", "podSelector narrowed by a label (selects none)", `{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}}}}`},
		{"networkpolicy", "podSelector narrowed by an expression", `{"spec":{"podSelector":{"matchExpressions":[{"key":"isolated","operator":"Exists"}]}}}`},
		{"networkpolicy", "ingress opened to all", `{"spec":{"ingress":[{}]}}`},
		{"networkpolicy", "ingress from every namespace added", `{"spec":{"ingress":[{"from":[{"podSelector":{}},{"namespaceSelector":{}}]}]}}`},
		{"networkpolicy", "Ingress removed from policyTypes", `{"spec":{"policyTypes":["Egress"]}}`},
		{"rolebinding", "a subject added", `{"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"ann"},{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}`},
		{"rolebinding", "the owner removed", `{"subjects":[]}`},
		{"clusterrole", "a verb added", `{"rules":[{"apiGroups":["platform.labhub.io"],"resources":["teamspaces"],"resourceNames":["alpha"],"verbs":["get","watch","update","patch","delete"]}]}`},
		{"clusterbinding", "a subject added", `{"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"ann"},{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"mallory"}]}`},
	}
	w.poll(t, "alpha Ready", func() bool { return w.observedCurrent("alpha") && w.ready("alpha") })
	var results []map[string]any
	for _, e := range edits {
		t.Run(e.child+": "+e.what, func(t *testing.T) {
			c := children[e.child]
			res := w.dyn.Resource(c.gvr).Namespace(c.namespace)
			before, err := res.Get(w.ctx, c.name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := ownedOf(before, c.owned)
			wt, err := watchtiming.StartWith[*unstructured.UnstructuredList](w.ctx, res, fields.OneTermEqualSelector("metadata.name", c.name).String())
			started(t, wt, err)
			start := time.Now()
			pt := types.MergePatchType
			if strings.HasPrefix(e.patch, "[") {
				pt = types.JSONPatchType
			}
			edited, err := res.Patch(w.ctx, c.name, pt, []byte(e.patch), metav1.PatchOptions{})
			if err != nil {
				t.Fatalf("the edit: %v", err)
			}
			if equality.Semantic.DeepEqual(want, ownedOf(edited, c.owned)) {
				t.Fatalf("the edit %s changed no owned field", e.patch)
			}
			sawEdit := false
			_, took, trace, err := wt.Await(start, w.timeout, func(ev watchtiming.Event) bool {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					return false
				}
				same := equality.Semantic.DeepEqual(want, ownedOf(u, c.owned))
				if !same {
					sawEdit = true
				}
				return sawEdit && same
			}, func(ev watchtiming.Event) string {
				u, _ := ev.Object.(*unstructured.Unstructured)
				if u == nil {
					return string(ev.Type)
				}
				return fmt.Sprintf("%s(rv %s)", string(ev.Type)[:1], u.GetResourceVersion())
			})
			if err != nil {
				now, _ := res.Get(w.ctx, c.name, metav1.GetOptions{})
				t.Fatalf("not reverted: %v\nwant %s\nnow  %s", err, mustJSON(want), mustJSON(ownedOf(now, c.owned)))
			}
			t.Logf("reverted in %s ms: %s", watchtiming.Ms(took), trace)
			if took >= time.Second {
				t.Errorf("reverted after %s, want within a second", took)
			}
			results = append(results, map[string]any{"child": e.child, "edit": e.what, "patch": e.patch, "reverted_seconds_fractional": seconds(took), "events": trace})
		})
	}
	w.poll(t, "alpha Ready again", func() bool { return w.observedCurrent("alpha") && w.ready("alpha") })
	w.evidence(t, "owned-fields.json", map[string]any{
		"edits":    results,
		"measured": "one watch on the child by name, from just before the admin's merge patch to the event that shows every owned field as it was",
	})
}

// ownedOf picks the owned fields out of an object (nil where absent).
func ownedOf(u *unstructured.Unstructured, paths [][]string) []any {
	if u == nil {
		return nil
	}
	out := make([]any, 0, len(paths))
	for _, p := range paths {
		v, _, _ := unstructured.NestedFieldNoCopy(u.Object, p...)
		out = append(out, v)
	}
	return out
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return strings.TrimSpace(string(b))
}
