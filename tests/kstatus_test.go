package tests_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// kstatusByReason is what Flux's and kpt's readiness wait (kstatus) must
// read from a TeamSpace, by the reason of its Ready condition: Current
// once Ready, InProgress on its way, Failed where a person must act. A
// reason the hook reports that is not here fails TestKstatus: decide.
var kstatusByReason = map[string]status.Status{
	"Ready": status.CurrentStatus,

	"Creating":                    status.InProgressStatus,
	"NamespacePending":            status.InProgressStatus,
	"NamespaceTerminating":        status.InProgressStatus,
	"NamespaceNotActive":          status.InProgressStatus,
	"NamespaceOutOfDate":          status.InProgressStatus,
	"QuotaPending":                status.InProgressStatus,
	"QuotaOutOfDate":              status.InProgressStatus,
	"LimitRangePending":           status.InProgressStatus,
	"LimitRangeOutOfDate":         status.InProgressStatus,
	"RoleBindingPending":          status.InProgressStatus,
	"RoleBindingOutOfDate":        status.InProgressStatus,
	"NetworkPolicyPending":        status.InProgressStatus,
	"NetworkPolicyOutOfDate":      status.InProgressStatus,
	"ClusterRolePending":          status.InProgressStatus,
	"ClusterRoleOutOfDate":        status.InProgressStatus,
	"ClusterRoleBindingPending":   status.InProgressStatus,
	"ClusterRoleBindingOutOfDate": status.InProgressStatus,
	"ChildRemoving":               status.InProgressStatus,
	"NamespaceRemoving":           status.InProgressStatus,
	"ArchivePending":              status.InProgressStatus,

	"InvalidSpec":                status.FailedStatus,
	"NamespaceConflict":          status.FailedStatus,
	"ClusterRoleConflict":        status.FailedStatus,
	"RequesterAllowanceExceeded": status.FailedStatus,
	"LimitsInvalid":              status.FailedStatus,
	"OwnerReserved":              status.FailedStatus,
	"NamespaceKept":              status.FailedStatus,
	"AdoptionPlanned":            status.FailedStatus,
}

func kstatusOf(t *testing.T, obj map[string]any) *status.Result {
	t.Helper()
	res, err := status.Compute(&unstructured.Unstructured{Object: obj})
	if err != nil {
		t.Fatalf("kstatus: %v", err)
	}
	return res
}

// TestKstatus reads the status of every golden answer as kstatus
// (sigs.k8s.io/cli-utils) does: as the engine stores it, and once more with
// a newer generation than the engine has seen (InProgress, whatever the
// conditions say). A TeamSpace being deleted is Terminating to kstatus
// whatever its reason (ArchivePending included): the alert rules watch that.
func TestKstatus(t *testing.T) {
	all := goldenTeamSpaces(t)
	for _, dir := range sortedKeys(all) {
		obj := all[dir]
		t.Run(dir, func(t *testing.T) {
			ready := readyOf(obj)
			if ready == nil {
				t.Fatal("no Ready condition")
			}
			reason := fmt.Sprint(ready["reason"])
			want, known := kstatusByReason[reason]
			meta := obj["metadata"].(map[string]any)
			switch {
			case meta["deletionTimestamp"] != nil:
				want = status.TerminatingStatus
			case !known:
				t.Fatalf("reason %s is not in kstatusByReason: say what kstatus must read", reason)
			}
			if got := kstatusOf(t, obj); got.Status != want {
				t.Errorf("kstatus %s (%s), want %s for reason %s", got.Status, got.Message, want, reason)
			}
			if want == status.TerminatingStatus {
				return
			}
			gen, _ := meta["generation"].(int64)
			meta["generation"] = gen + 1
			defer func() { meta["generation"] = gen }()
			if got := kstatusOf(t, obj); got.Status != status.InProgressStatus {
				t.Errorf("with a newer generation: kstatus %s (%s), want InProgress", got.Status, got.Message)
			}
		})
	}
}

// TestKstatusWithoutStatus: a TeamSpace the engine has not answered yet, as
// the API server returns it (crd.yaml defaults status.observedGeneration
// to 0, which no generation is), is InProgress, not Current.
func TestKstatusWithoutStatus(t *testing.T) {
	obj := map[string]any{
		"apiVersion": "platform.labhub.io/v1alpha1", "kind": "TeamSpace",
		"metadata": map[string]any{"name": "new", "generation": int64(1)},
		"spec":     map[string]any{"pods": int64(4)},
		"status":   map[string]any{"observedGeneration": int64(0)},
	}
	if got := kstatusOf(t, obj); got.Status != status.InProgressStatus {
		t.Errorf("kstatus %s (%s), want InProgress", got.Status, got.Message)
	}
}
