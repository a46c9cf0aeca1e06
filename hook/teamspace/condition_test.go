package teamspace

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

func TestReadyConditionTransitionTime(t *testing.T) {
	old := metav1.NewTime(time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC))
	created := metav1.NewTime(time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC))
	edited := metav1.NewTime(time.Date(2026, 12, 2, 9, 30, 0, 0, time.UTC))
	childCreated := metav1.NewTime(time.Date(2026, 12, 2, 9, 45, 0, 0, time.UTC))

	tests := []struct {
		name     string
		previous []metav1.Condition
		status   metav1.ConditionStatus
		want     metav1.Time
	}{
		{name: "first condition takes the newest time in the request", status: metav1.ConditionFalse, want: childCreated},
		{name: "same status keeps the old time", previous: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, LastTransitionTime: old}}, status: metav1.ConditionFalse, want: old},
		{name: "same status, other reason, keeps the old time", previous: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: "QuotaPending", LastTransitionTime: old}}, status: metav1.ConditionFalse, want: old},
		{name: "changed status takes the newest time", previous: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, LastTransitionTime: old}}, status: metav1.ConditionFalse, want: childCreated},
		{name: "other condition types are ignored", previous: []metav1.Condition{{Type: "Other", Status: metav1.ConditionFalse, LastTransitionTime: old}}, status: metav1.ConditionFalse, want: childCreated},
		{name: "zero old time is replaced", previous: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse}}, status: metav1.ConditionFalse, want: childCreated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Parent: &Parent{Metadata: Meta{
				Name: "a", Generation: 3, CreationTimestamp: created,
				ManagedFields: []ManagedFieldsTime{{Time: &edited}},
			}}, Children: map[string]ObjectMap{namespaceType.key: {"team-a": {Metadata: Meta{CreationTimestamp: childCreated}}}}}
			r.Parent.Status.Conditions = tt.previous
			c := condition(observe(r), v1alpha1.ConditionReady, tt.status, "Reason", "message")
			if !c.LastTransitionTime.Equal(&tt.want) {
				t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime, tt.want)
			}
			if c.ObservedGeneration != 3 {
				t.Errorf("observedGeneration = %d, want 3", c.ObservedGeneration)
			}
		})
	}
}

func TestObservedAtWithoutTimestamps(t *testing.T) {
	r := &Request{Parent: &Parent{}}
	if got := observedAt(r.Parent, r.Children); !got.Equal(time.Unix(0, 0)) {
		t.Errorf("observedAt() = %v, want the Unix epoch", got)
	}
}
