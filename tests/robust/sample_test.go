package robust

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// TestSampleChangesOnly: the recorder keeps a sample only when its value
// changed, and each object's value once more as last seen when it is no
// longer sampled: three rounds of a TeamSpace Ready with its quota, then
// the TeamSpace gone, record one sample of each and one closing sample at
// the third round.
func TestSampleChangesOnly(t *testing.T) {
	r := &Recorder{hadQuota: map[string]bool{}, last: map[string]sampled{}}
	ts := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"pods": int64(4), "cpu": "1"},
		"status": map[string]any{"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}}}}
	ts.SetName("a")
	ts.SetUID("ua")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team-a", OwnerReferences: []metav1.OwnerReference{{Kind: "TeamSpace", Name: "a", UID: types.UID("ua"), Controller: new(true)}}}}
	quota := func(string) (*corev1.ResourceQuota, bool) {
		return &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resourceQuantity("4")}}}, true
	}
	for range 3 {
		r.sample([]any{ts}, []any{ns}, quota)
		time.Sleep(time.Millisecond)
	}
	first := r.h.Events[len(r.h.Events)-1].At
	if n := len(r.h.Events); n != 3 {
		t.Fatalf("%d events after three equal rounds, want 3 (Ready, quota, quotas): %v", n, r.h.Events)
	}
	lastSeen := r.last[sampleKey(r.h.Events[0])].seen
	r.sample(nil, nil, quota)
	if n := len(r.h.Events); n != 6 {
		t.Fatalf("%d events once the TeamSpace is gone, want 6 (three closing): %v", n, r.h.Events)
	}
	for _, e := range r.h.Events[3:] {
		if !e.At.Equal(lastSeen) || !e.At.After(first) {
			t.Errorf("closing %s at %s, want at the third round %s", e.Kind, e.At, lastSeen)
		}
	}
	if len(r.last) != 0 {
		t.Errorf("%d objects still tracked", len(r.last))
	}
}

func resourceQuantity(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

// TestNamespaceSeenGone: a namespace of a live TeamSpace deleted whole
// while the recorder's watch was down (never seen with its
// deletionTimestamp) is recorded going when seen gone, and the
// invariants judge it; one seen going keeps the time it began.
func TestNamespaceSeenGone(t *testing.T) {
	r := &Recorder{seen: map[string]string{}}
	owned := func(name, uid string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(uid), OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "platform.labhub.io/v1alpha1", Kind: "TeamSpace", Name: "a", UID: "ua", Controller: ptrTrue()}}}}
	}
	r.namespace(owned("team-a--e2", "n1"))
	r.namespaceGone(cache.DeletedFinalStateUnknown{Key: "team-a--e2", Obj: owned("team-a--e2", "n1")}, at(20))
	going := owned("team-a--e1", "n2")
	going.DeletionTimestamp = &metav1.Time{Time: at(10)}
	r.namespace(going)
	r.namespaceGone(going, at(30))
	var got []string
	for _, e := range r.History().Events {
		if e.Kind == NamespaceDeleting {
			got = append(got, e.Namespace+" "+e.At.Sub(t0).Round(time.Second).String())
		}
	}
	if want := []string{"team-a--e2 21s", "team-a--e1 11s"}; !slices.Equal(got, want) {
		t.Errorf("NamespaceDeleting %v, want %v (the second its deletion is in)", got, want)
	}
	if v := names(Check(r.History(), loose)); !strings.Contains(v, "no-namespace-of-a-live-teamspace-deleted") {
		t.Errorf("violations %q: the unconfirmed deletion seen only gone is not judged", v)
	}
}
