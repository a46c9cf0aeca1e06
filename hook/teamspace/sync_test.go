package teamspace

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Tiny typed fixtures for the Sync table: each builds only what a row needs,
// so that a row reads as the situation it is about. The golden cases in
// tests/testdata cover the same ground on the engine's real requests.
const fixtureUID = "11111111-2222-4333-8444-555555555555"

func parent(spec string) *Parent {
	p := &Parent{APIVersion: APIVersion, Kind: Kind, Spec: json.RawMessage(spec)}
	p.Metadata = Meta{Name: "alpha", UID: fixtureUID, Generation: 2}
	return p
}

type objOpt func(*Object)

func phase(p string) objOpt { return func(o *Object) { o.Status.Phase = p } }

func deleting() objOpt {
	return func(o *Object) { t := metav1.Unix(1, 0); o.Metadata.DeletionTimestamp = &t }
}

func controlledBy(uid string) objOpt {
	return func(o *Object) {
		yes := true
		o.Metadata.OwnerReferences = []metav1.OwnerReference{{Kind: Kind, Name: "alpha", UID: types.UID(uid), Controller: &yes}}
	}
}

func hard(pods, cpu string) objOpt {
	return func(o *Object) { o.Spec.Hard = map[string]string{hardPods: pods, hardCPU: cpu} }
}

func lastApplied(j string) objOpt {
	return func(o *Object) { o.Metadata.Annotations = map[string]string{LastAppliedAnnotation: j} }
}

func namespace(opts ...objOpt) *Object {
	o := &Object{APIVersion: "v1", Kind: "Namespace", Metadata: Meta{Name: "team-alpha"}}
	o.Status.Phase = "Active"
	for _, f := range opts {
		f(o)
	}
	return o
}

func quota(opts ...objOpt) *Object {
	o := &Object{APIVersion: "v1", Kind: "ResourceQuota", Metadata: Meta{Name: QuotaName, Namespace: "team-alpha"}}
	for _, f := range opts {
		f(o)
	}
	return o
}

// request is a sync request with the given observed namespace, quota and
// related namespace (each may be nil).
func request(spec string, ns, q, related *Object) *Request {
	r := &Request{Parent: parent(spec), Children: map[string]ObjectMap{NamespaceGroup: {}, QuotaGroup: {}}, Related: map[string]ObjectMap{}}
	if ns != nil {
		r.Children[NamespaceGroup]["team-alpha"] = ns
	}
	if q != nil {
		r.Children[QuotaGroup]["team-alpha/"+QuotaName] = q
	}
	if related != nil {
		r.Related[NamespaceGroup] = ObjectMap{"team-alpha": related}
	}
	return r
}

// TestSyncReasons has a row per Ready reason: the children asked for (kind
// and, for the quota, its limits) and the condition's status and reason.
func TestSyncReasons(t *testing.T) {
	const spec = `{"pods": 4, "cpu": "0.5"}`
	const ns, rq = "Namespace", "ResourceQuota pods=4, requests.cpu=500m"
	tests := []struct {
		name         string
		req          *Request
		wantChildren []string
		wantStatus   metav1.ConditionStatus
		wantReason   string
	}{
		{name: "Ready: namespace Active, quota canonical", req: request(spec, namespace(), quota(hard("4", "500m")), nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionTrue, wantReason: ReasonReady},
		{name: "Ready: observed quota in another spelling", req: request(spec, namespace(), quota(hard("4", "0.5")), nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionTrue, wantReason: ReasonReady},
		{name: "NamespacePending: nothing observed", req: request(spec, nil, nil, nil),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespacePending},
		{name: "NamespacePending: own namespace seen only as related", req: request(spec, nil, nil, namespace(controlledBy(fixtureUID))),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespacePending},
		{name: "NamespaceTerminating: deletionTimestamp, phase still Active", req: request(spec, namespace(deleting()), nil, nil),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespaceTerminating},
		{name: "NamespaceTerminating: phase Terminating only", req: request(spec, namespace(phase("Terminating")), quota(hard("4", "500m")), nil),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespaceTerminating},
		{name: "NamespaceNotActive: phase empty", req: request(spec, namespace(phase("")), nil, nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespaceNotActive},
		{name: "QuotaPending", req: request(spec, namespace(), nil, nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionFalse, wantReason: ReasonQuotaPending},
		{name: "QuotaOutOfDate: pods edited", req: request(spec, namespace(), quota(hard("99", "500m")), nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionFalse, wantReason: ReasonQuotaOutOfDate},
		{name: "QuotaOutOfDate: cpu key missing", req: request(spec, namespace(), quota(func(o *Object) { o.Spec.Hard = map[string]string{hardPods: "4"} }), nil),
			wantChildren: []string{ns, rq}, wantStatus: metav1.ConditionFalse, wantReason: ReasonQuotaOutOfDate},
		{name: "NamespaceConflict: related namespace of another owner", req: request(spec, nil, nil, namespace(controlledBy("someone-else"))),
			wantChildren: nil, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespaceConflict},
		{name: "NamespaceConflict: related namespace without owner", req: request(spec, nil, nil, namespace()),
			wantChildren: nil, wantStatus: metav1.ConditionFalse, wantReason: ReasonNamespaceConflict},
		{name: "InvalidSpec: keeps the observed quota", req: request(`{"pods": 0}`, namespace(), quota(hard("3", "1")), nil),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: ReasonInvalidSpec},
		{name: "InvalidSpec: keeps what the engine last applied, not a hand edit", req: request(`{"pods": 0}`, namespace(), quota(hard("99", "1"), lastApplied(`{"spec":{"hard":{"pods":"3","requests.cpu":"1"}}}`)), nil),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: ReasonInvalidSpec},
		{name: "InvalidSpec: last applied without limits, keeps the observed quota", req: request(`{"pods": 0}`, namespace(), quota(hard("3", "1"), lastApplied(`{"spec":{}}`)), nil),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: ReasonInvalidSpec},
		{name: "InvalidSpec: no quota to keep", req: request(`{"cpu": "lots", "pods": 4}`, namespace(), nil, nil),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: ReasonInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.req.Validate(); err != nil {
				t.Fatalf("fixture is not a valid request: %v", err)
			}
			resp := Sync(tt.req)
			var got []string
			for _, c := range resp.Children {
				desc := c.GetKind()
				if h, ok, _ := unstructuredHard(c.Object); ok {
					desc += " " + describeHard(h)
				}
				got = append(got, desc)
			}
			if diff := cmp.Diff(tt.wantChildren, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			if len(resp.Status.Conditions) != 1 {
				t.Fatalf("conditions = %+v, want one", resp.Status.Conditions)
			}
			c := resp.Status.Conditions[0]
			if c.Type != ConditionReady || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Errorf("condition = %s %s %s (generation %d), want Ready %s %s (generation 2)", c.Type, c.Status, c.Reason, c.ObservedGeneration, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// unstructuredHard reads spec.hard of an answered child, if it has one.
func unstructuredHard(obj map[string]any) (map[string]string, bool, error) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, false, nil
	}
	h, ok := spec["hard"].(map[string]any)
	if !ok {
		return nil, false, nil
	}
	out := map[string]string{}
	for k, v := range h {
		out[k], _ = v.(string)
	}
	return out, true, nil
}
