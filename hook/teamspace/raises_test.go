package teamspace

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/tests/golden"
)

// TestShareMoveNeverAboveTotals moves a share between two namespaces of
// a TeamSpace (team-delta--dev 100m -> 200m of requests.cpu, team-delta
// 200m -> 100m, 500m in all) and carries the answers as the engine does
// with the quotas made by the DecoratorController: each namespace's
// LimitRange synced on its own, in the worst order (the raised namespace
// first, every round). After every quota written, the team's quotas add
// up to at most its total; and the move completes: Ready, each quota as
// the spec asks.
func TestShareMoveNeverAboveTotals(t *testing.T) {
	root := filepath.Join("..", "..", "tests", "testdata")
	var r Request
	if err := json.Unmarshal(golden.Request(t, root, filepath.Join(root, "sync", "namespaces-share-moved-raise-held")), &r); err != nil {
		t.Fatal(err)
	}
	// The quotas as they are: each namespace's attachments.
	attachments := map[string]ObjectMap{}
	for key, q := range r.Children[quotaType.key] {
		ns, _, _ := strings.Cut(key, "/")
		if attachments[ns] == nil {
			attachments[ns] = ObjectMap{}
		}
		attachments[ns][key] = q
	}
	req := viaDecorator(t, &r)
	// Worst order: the namespace being raised first.
	order := []string{"team-delta--dev", "team-delta--prod", "team-delta"}
	total := resource.MustParse("500m")

	sum := func() resource.Quantity {
		var s resource.Quantity
		for _, objs := range attachments {
			for _, o := range objs {
				q, err := quotaType.decode(o)
				if err != nil {
					t.Fatal(err)
				}
				s.Add(q.(*corev1.ResourceQuota).Spec.Hard[corev1.ResourceRequestsCPU])
			}
		}
		return s
	}
	// The engine applies a TeamSpace's answer: each LimitRange's
	// annotations (the quotas its namespace must hold).
	sync := func() *Response {
		resp := Sync(req)
		for _, c := range resp.Children {
			if c["kind"] != "LimitRange" {
				continue
			}
			meta := c["metadata"].(map[string]any)
			lr := req.Children[quotasCarrier.key][meta["namespace"].(string)+"/"+LimitRangeName]
			for k, v := range meta["annotations"].(map[string]any) {
				lr.Metadata.Annotations[k] = v.(string)
			}
			lr.Spec, _ = json.Marshal(c["spec"])
		}
		return resp
	}
	// The engine syncs one namespace's LimitRange: its quotas written,
	// then (the change of an attachment) its report.
	decorate := func(ns string) {
		lr := req.Children[quotasCarrier.key][ns+"/"+LimitRangeName]
		for range 2 {
			resp, err := Quotas(&QuotasRequest{Object: lr, Attachments: map[string]ObjectMap{quotaType.key: attachments[ns]}})
			if err != nil {
				t.Fatal(err)
			}
			attachments[ns], _ = applyQuotas(t, lr, ns, attachments[ns], resp)
			if s := sum(); s.Cmp(total) > 0 {
				t.Fatalf("after %s's quotas were written, the team's quotas hold requests.cpu %s together, above its total %s", ns, s.String(), total.String())
			}
		}
	}

	for round := range 5 {
		resp := sync()
		if c := resp.Status.Conditions[0]; c.Reason == v1alpha1.ReasonReady {
			for _, ns := range order {
				got, _ := quotasOf(req.Children[quotasCarrier.key][ns+"/"+LimitRangeName].Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)
				want := map[string]string{"team-delta--dev": "200m", "team-delta--prod": "200m", "team-delta": "100m"}[ns]
				if cpu := got[QuotaName][corev1.ResourceRequestsCPU]; cpu.String() != want {
					t.Errorf("Ready with %s's requests.cpu %s, want %s", ns, cpu.String(), want)
				}
			}
			if round < 2 {
				t.Errorf("Ready after %d rounds: the raise did not wait for the lowering", round)
			}
			return
		} else if round == 0 && !strings.Contains(c.Message, "once the quotas it is taken from are lowered") {
			t.Errorf("while the raise waits, Ready says %s: %s; want why", c.Reason, c.Message)
		}
		for _, ns := range slices.Clone(order) {
			decorate(ns)
		}
	}
	c := Sync(req).Status.Conditions[0]
	t.Fatalf("not Ready after 5 rounds: the move never completed: %s: %s", c.Reason, c.Message)
}

// TestRemovedNamespaceGivesItsShareBackOnceGone: an entry removed with
// its confirmation, its namespace terminating (its pods still running,
// its LimitRange and quotas already gone): team-<name>'s quota keeps its
// size until the namespace is gone, then takes the share back.
func TestRemovedNamespaceGivesItsShareBackOnceGone(t *testing.T) {
	root := filepath.Join("..", "..", "tests", "testdata")
	var r Request
	if err := json.Unmarshal(golden.Request(t, root, filepath.Join(root, "sync", "namespaces-entry-removal-terminating")), &r); err != nil {
		t.Fatal(err)
	}
	cpu := func(resp *Response) string {
		for _, c := range resp.Children {
			meta := c["metadata"].(map[string]any)
			if c["kind"] == "ResourceQuota" && meta["namespace"] == "team-delta" {
				return c["spec"].(map[string]any)["hard"].(map[string]any)["requests.cpu"].(string)
			}
		}
		t.Fatal("no team-quota in team-delta answered")
		return ""
	}
	if got := cpu(Sync(&r)); got != "200m" {
		t.Errorf("while team-delta--dev terminates, team-delta's requests.cpu is answered %s, want 200m (as it is)", got)
	}
	for _, objs := range r.Children {
		for k := range objs {
			if strings.HasPrefix(k, "team-delta--dev") {
				delete(objs, k)
			}
		}
	}
	if got := cpu(Sync(&r)); got != "300m" {
		t.Errorf("once team-delta--dev is gone, team-delta's requests.cpu is answered %s, want 300m (its share back)", got)
	}
}

// TestReleasedNamespaceGivesItsShareBackOnceItsQuotasGo: an adopted
// namespace released (its entry dropped; the namespace stays) while its
// quotas are still there: team-<name>'s quota takes its share back only
// once they are gone.
func TestReleasedNamespaceGivesItsShareBackOnceItsQuotasGo(t *testing.T) {
	root := filepath.Join("..", "..", "tests", "testdata")
	var r Request
	if err := json.Unmarshal(golden.Request(t, root, filepath.Join(root, "sync", "adopt-released")), &r); err != nil {
		t.Fatal(err)
	}
	lrs := r.Children[quotasCarrier.key]
	// team-delta's quota before the share came back: 200m of the 500m.
	lrs["team-delta/"+LimitRangeName].Metadata.Annotations[v1alpha1.QuotasObservedAnnotation] = `{"team-quota":{"pods":"1","requests.cpu":"300m","requests.memory":"1Gi"}}`
	asked := func() string {
		for _, c := range Sync(&r).Children {
			meta := c["metadata"].(map[string]any)
			if c["kind"] == "LimitRange" && meta["namespace"] == "team-delta" {
				q, err := quotasOf(map[string]string{v1alpha1.QuotasAnnotation: meta["annotations"].(map[string]any)[v1alpha1.QuotasAnnotation].(string)}, v1alpha1.QuotasAnnotation)
				if err != nil {
					t.Fatal(err)
				}
				cpu := q[QuotaName][corev1.ResourceRequestsCPU]
				return cpu.String()
			}
		}
		t.Fatal("no LimitRange in team-delta answered")
		return ""
	}
	if got := asked(); got != "300m" {
		t.Errorf("while payments still holds its quotas, team-delta asks requests.cpu %s, want 300m (as it is)", got)
	}
	delete(lrs["payments/"+LimitRangeName].Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)
	if got := asked(); got != "500m" {
		t.Errorf("once payments' quotas are gone, team-delta asks requests.cpu %s, want 500m (its share back)", got)
	}
}
