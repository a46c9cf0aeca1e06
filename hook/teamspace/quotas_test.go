package teamspace

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/tests/golden"
)

// viaDecorator is request r as the engine sends it once its
// CompositeController leaves the quotas to the DecoratorController
// (quotas.go): no ResourceQuota children, and each observed LimitRange
// carrying what Quotas reports of the quotas in its namespace (their
// spec.hard, the over-share message) and, in its last-applied copy, the
// quotas it was last asked to hold (the quotas' own last-applied
// spec.hard, else their spec.hard, as childType.kept reads them). Nil when
// r has quotas in a namespace without the LimitRange: the
// DecoratorController's quotas go with it.
func viaDecorator(t *testing.T, r *Request) *Request {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var out Request
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	quotas := out.Children[quotaType.key]
	delete(out.Children, quotaType.key)
	observed := map[string]map[string]corev1.ResourceList{}
	applied := map[string]map[string]corev1.ResourceList{}
	overShares := map[string]string{}
	written := map[string][]ManagedFieldsTime{}
	for key, q := range quotas {
		ns, name, _ := strings.Cut(key, "/")
		if !slices.Contains(quotaNames, name) {
			continue
		}
		live, err := quotaType.decode(q)
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		hard := live.(*corev1.ResourceQuota).Spec.Hard
		last := hard
		if a := quotaType.lastApplied(q); a != nil {
			last = a.(*corev1.ResourceQuota).Spec.Hard
		}
		if observed[ns] == nil {
			observed[ns], applied[ns] = map[string]corev1.ResourceList{}, map[string]corev1.ResourceList{}
		}
		observed[ns][name], applied[ns][name] = hard, last
		// The report is written after each change of a quota: its time
		// is the namespace's (condition's lastTransitionTime reads it).
		written[ns] = append(written[ns], q.Metadata.ManagedFields...)
		created := q.Metadata.CreationTimestamp
		written[ns] = append(written[ns], ManagedFieldsTime{Time: &created})
		if name == QuotaName {
			overShares[ns] = overShare(q)
		}
	}
	for ns := range observed {
		o := out.Children[quotasCarrier.key][ns+"/"+LimitRangeName]
		if o == nil {
			// Quotas without their parent: not a state the
			// DecoratorController's quotas can be in (they go with it).
			return nil
		}
		if o.Metadata.Annotations == nil {
			o.Metadata.Annotations = map[string]string{}
		}
		o.Metadata.Annotations[v1alpha1.QuotasObservedAnnotation] = encodeQuotas(observed[ns])
		o.Metadata.ManagedFields = append(o.Metadata.ManagedFields, written[ns]...)
		if msg := overShares[ns]; msg != "" {
			o.Metadata.Annotations[v1alpha1.OverShareAnnotation] = msg
		}
		var last map[string]any
		if json.Unmarshal([]byte(o.Metadata.Annotations[LastAppliedAnnotation]), &last) != nil {
			continue
		}
		meta, _ := last["metadata"].(map[string]any)
		if meta == nil {
			continue
		}
		annotations, _ := meta["annotations"].(map[string]any)
		if annotations == nil {
			annotations = map[string]any{}
			meta["annotations"] = annotations
		}
		annotations[v1alpha1.QuotasAnnotation] = encodeQuotas(applied[ns])
		b, _ := json.Marshal(last)
		o.Metadata.Annotations[LastAppliedAnnotation] = string(b)
	}
	return &out
}

// withoutQuotas is an answer as JSON values, the quotas taken out: its
// ResourceQuota children (returned by namespace) and each LimitRange's
// QuotasAnnotation (returned too, by namespace), and the quota figures of its status
// (usage), which only an answer with quotas as children has.
func withoutQuotas(t *testing.T, resp *Response) (answer map[string]any, children, annotated map[string]map[string]corev1.ResourceList) {
	t.Helper()
	b, err := json.Marshal(resp)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &answer); err != nil {
		t.Fatal(err)
	}
	children, annotated = map[string]map[string]corev1.ResourceList{}, map[string]map[string]corev1.ResourceList{}
	var kept []any
	for _, c := range answer["children"].([]any) {
		child := c.(map[string]any)
		meta := child["metadata"].(map[string]any)
		switch child["kind"] {
		case "ResourceQuota":
			var q corev1.ResourceQuota
			b, _ := json.Marshal(child)
			if err := json.Unmarshal(b, &q); err != nil {
				t.Fatal(err)
			}
			if children[q.Namespace] == nil {
				children[q.Namespace] = map[string]corev1.ResourceList{}
			}
			children[q.Namespace][q.Name] = q.Spec.Hard
			continue
		case "LimitRange":
			if a, ok := meta["annotations"].(map[string]any); ok {
				if v, ok := a[v1alpha1.QuotasAnnotation].(string); ok {
					quotas, err := quotasOf(map[string]string{v1alpha1.QuotasAnnotation: v}, v1alpha1.QuotasAnnotation)
					if err != nil {
						t.Fatal(err)
					}
					annotated[meta["namespace"].(string)] = quotas
					delete(a, v1alpha1.QuotasAnnotation)
				}
				if len(a) == 0 {
					delete(meta, "annotations")
				}
			}
		}
		kept = append(kept, child)
	}
	answer["children"] = kept
	status := answer["status"].(map[string]any)
	delete(status, "usage")
	if nss, ok := status["namespaces"].([]any); ok {
		for _, ns := range nss {
			delete(ns.(map[string]any), "usage")
		}
	}
	if conds, ok := status["conditions"].([]any); ok {
		for _, c := range conds {
			c := c.(map[string]any)
			msg := madeByDecorator.ReplaceAllString(c["message"].(string), "")
			// Finalize lists the children left; the quotas are not the
			// TeamSpace's via the DecoratorController, they go with it.
			c["message"] = remainingQuota.ReplaceAllString(msg, "")
		}
	}
	return answer, children, annotated
}

var remainingQuota = regexp.MustCompile(`, ResourceQuota [^ ,]+`)

// madeByDecorator is what observation.madeBy adds to a pending quota's
// message.
var madeByDecorator = regexp.MustCompile(` by DecoratorController ` + QuotasControllerName + `( \(if this lasts, [^)]*\)| once LimitRange [^ ]+ is there)`)

// TestQuotasViaDecoratorAnswerAsChildren: every sync and finalize case of
// the golden tests (the engine's recorded requests among them), asked
// again as the engine asks once the DecoratorController makes the quotas
// (viaDecorator), gets the same answer: the same status, the usage
// figures aside; the same children, the quotas aside; and each LimitRange
// carries in its QuotasAnnotation exactly the quotas answered as children
// before (for a namespace the answer had none for yet, being made or
// terminating, the quotas it will hold).
func TestQuotasViaDecoratorAnswerAsChildren(t *testing.T) {
	compared := 0
	for _, c := range goldenTeamSpaceCases(t) {
		r := c.req
		if _, declared := r.Children[quotaType.key]; !declared {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			asChildren := &r
			if quotasViaDecorator(asChildren.Children) {
				t.Fatal("a request with ResourceQuota children is answered via the DecoratorController")
			}
			via := viaDecorator(t, &r)
			if via == nil {
				t.Skip("quotas without their LimitRange: not a state of the DecoratorController's quotas")
			}
			if !quotasViaDecorator(via.Children) {
				t.Fatal("a request without ResourceQuota children is not answered via the DecoratorController")
			}
			want, children, _ := withoutQuotas(t, c.answer(asChildren))
			got, _, annotated := withoutQuotas(t, c.answer(via))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("answered via the DecoratorController, the answer differs (-as children +via the DecoratorController):\n%s", diff)
			}
			for ns, quotas := range children {
				if diff := cmp.Diff(quotas, annotated[ns]); diff != "" {
					t.Errorf("namespace %s: its LimitRange's annotation %s is not the quotas answered as children (-children +annotation):\n%s", ns, v1alpha1.QuotasAnnotation, diff)
				}
			}
		})
		compared++
	}
	if compared < 50 {
		t.Errorf("compared %d cases; the golden tests have more", compared)
	}
}

// goldenCase is a sync or finalize case of the golden tests whose
// request the hook answers (refused ones are left out), decoded.
type goldenCase struct {
	name string // hook/case
	hook string
	req  Request
}

// goldenTeamSpaceCases are the golden tests' sync and finalize cases, the
// engine's recorded requests among them.
func goldenTeamSpaceCases(t *testing.T) []goldenCase {
	t.Helper()
	root := filepath.Join("..", "..", "tests", "testdata")
	var out []goldenCase
	for _, hook := range []string{"sync", "finalize"} {
		for _, dir := range golden.Cases(t, root, hook) {
			c := goldenCase{name: hook + "/" + filepath.Base(dir), hook: hook}
			if json.Unmarshal(golden.Request(t, root, dir), &c.req) != nil || c.req.Validate() != nil {
				continue // refused before anything is answered
			}
			out = append(out, c)
		}
	}
	return out
}

// answer is what the case's hook answers r.
func (c goldenCase) answer(r *Request) *Response {
	if c.hook == "finalize" {
		return Finalize(r, "alpha.json")
	}
	return Sync(r)
}

// TestQuotasRoundTrip follows the protocol between the two controllers
// as the engine carries it: Sync asks for the quotas in the LimitRange's
// annotation (and waits: QuotaPending), Quotas answers them and reports
// none yet, the engine creates them, Quotas reports them (and once
// reported, answers the same report again: nothing more to write), and
// Sync, reading the report, is Ready; a spec change makes the quotas out
// of date until the report shows the new ones.
func TestQuotasRoundTrip(t *testing.T) {
	root := filepath.Join("..", "..", "tests", "testdata")
	var r Request
	if err := json.Unmarshal(golden.Request(t, root, filepath.Join(root, "sync", "ready")), &r); err != nil {
		t.Fatal(err)
	}
	req := viaDecorator(t, &r)
	lr := req.Children[quotasCarrier.key]["team-delta/"+LimitRangeName]
	delete(lr.Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)

	ready := func(want string) *Response {
		t.Helper()
		resp := Sync(req)
		if got := resp.Status.Conditions[0].Reason; got != want {
			t.Fatalf("Ready reason %s (%s), want %s", got, resp.Status.Conditions[0].Message, want)
		}
		return resp
	}
	// What the engine applies of the answer: the LimitRange's
	// annotations, the content of every child.
	applyAnswer := func(resp *Response) {
		t.Helper()
		for _, c := range resp.Children {
			if c["kind"] == "LimitRange" {
				for k, v := range c["metadata"].(map[string]any)["annotations"].(map[string]any) {
					lr.Metadata.Annotations[k] = v.(string)
				}
			}
			b, _ := json.Marshal(c)
			var o Object
			if err := json.Unmarshal(b, &o); err != nil {
				t.Fatal(err)
			}
			key := o.Metadata.Name
			if o.Metadata.Namespace != "" {
				key = o.Metadata.Namespace + "/" + key
			}
			for typ, objs := range req.Children {
				if live := objs[key]; live != nil && live.Kind == o.Kind {
					live.Spec, live.RoleRef, live.Subjects, live.Rules = o.Spec, o.RoleRef, o.Subjects, o.Rules
					req.Children[typ][key] = live
				}
			}
		}
	}
	attachments := ObjectMap{}
	decorate := func() *QuotasResponse {
		t.Helper()
		qr := &QuotasRequest{Object: lr, Attachments: map[string]ObjectMap{quotaType.key: attachments}}
		if err := qr.Validate(); err != nil {
			t.Fatal(err)
		}
		resp, err := Quotas(qr)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	// The engine: applies the attachments and the report.
	engine := func(resp *QuotasResponse) (changed bool) {
		t.Helper()
		attachments, changed = applyQuotas(t, lr, "team-delta", attachments, resp)
		return changed
	}

	applyAnswer(ready(v1alpha1.ReasonQuotaPending))
	engine(decorate()) // creates team-quota; reports nothing yet
	ready(v1alpha1.ReasonQuotaPending)
	if !engine(decorate()) { // reports team-quota
		t.Fatal("the report of the created quota changed nothing")
	}
	if engine(decorate()) {
		t.Error("a second pass over the same quotas wrote something: the engine would write on every pod event")
	}
	ready(v1alpha1.ReasonReady)

	// The spec changes: out of date until the report shows the new quota.
	var spec map[string]any
	if err := json.Unmarshal(req.Parent.Spec, &spec); err != nil {
		t.Fatal(err)
	}
	spec["pods"] = 5
	req.Parent.Spec, _ = json.Marshal(spec)
	applyAnswer(ready(v1alpha1.ReasonQuotaOutOfDate))
	engine(decorate()) // updates team-quota
	ready(v1alpha1.ReasonQuotaOutOfDate)
	engine(decorate()) // reports it
	resp := ready(v1alpha1.ReasonReady)
	hard, _ := quotasOf(lr.Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)
	if pods := hard[QuotaName][corev1.ResourcePods]; pods.Cmp(resource.MustParse("5")) != 0 {
		t.Errorf("reported %v, want pods 5", hard)
	}
	if resp.Status.Usage != nil {
		t.Errorf("status.usage %+v via the DecoratorController: it would be written on every pod event", resp.Status.Usage)
	}
}

// applyQuotas is what the engine does with Quotas' answer resp for the
// LimitRange lr of namespace ns: the report's annotations set or removed
// on lr, the attachments replaced by the answered ones; it returns them,
// and whether an annotation or an answered attachment changed.
func applyQuotas(t *testing.T, lr *Object, ns string, attachments ObjectMap, resp *QuotasResponse) (ObjectMap, bool) {
	t.Helper()
	changed := false
	for k, v := range resp.Annotations {
		old, had := lr.Metadata.Annotations[k]
		switch {
		case v == nil && had:
			delete(lr.Metadata.Annotations, k)
			changed = true
		case v != nil && (!had || old != *v):
			lr.Metadata.Annotations[k] = *v
			changed = true
		}
	}
	next := ObjectMap{}
	for _, a := range resp.Attachments {
		b, _ := json.Marshal(a)
		var o Object
		if err := json.Unmarshal(b, &o); err != nil {
			t.Fatal(err)
		}
		key := ns + "/" + o.Metadata.Name
		if old, ok := attachments[key]; !ok || string(old.Spec) != string(o.Spec) {
			changed = true
		}
		next[key] = &o
	}
	return next, changed
}
