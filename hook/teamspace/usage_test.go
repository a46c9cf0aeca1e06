package teamspace

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQuotaUsage: the status's usage from an observed quota's status, as
// the engine sends it.
func TestQuotaUsage(t *testing.T) {
	cases := []struct {
		name  string
		quota string // the observed quota's JSON; "" for none
		want  Usage
	}{
		{"no quota", "", Usage{Pods: "-", CPU: "-"}},
		{"status not filled yet", `{"spec":{"hard":{"pods":"4","requests.cpu":"2"}}}`, Usage{Pods: "-", CPU: "-"}},
		{"status empty", `{"status":{}}`, Usage{Pods: "-", CPU: "-"}},
		{"nothing used", `{"status":{"hard":{"pods":"4","requests.cpu":"2"},"used":{"pods":"0","requests.cpu":"0"}}}`, Usage{Pods: "0/4", CPU: "0/2"}},
		{"some used", `{"status":{"hard":{"pods":"4","requests.cpu":"2"},"used":{"pods":"1","requests.cpu":"100m"}}}`, Usage{Pods: "1/4", CPU: "100m/2"}},
		{"canonical form", `{"status":{"hard":{"pods":"4","requests.cpu":"1.5"},"used":{"pods":"4","requests.cpu":"0.25"}}}`, Usage{Pods: "4/4", CPU: "250m/1500m"}},
		{"memory", `{"status":{"hard":{"pods":"4","requests.cpu":"2","requests.memory":"1Gi"},"used":{"pods":"1","requests.cpu":"500m","requests.memory":"268435456"}}}`,
			Usage{Pods: "1/4", CPU: "500m/2", Memory: "256Mi/1Gi"}},
		{"memory limit not counted yet", `{"status":{"hard":{"pods":"4","requests.cpu":"2","requests.memory":"1Gi"},"used":{"pods":"1","requests.cpu":"500m"}}}`,
			Usage{Pods: "1/4", CPU: "500m/2", Memory: "-"}},
		{"used in another format than the limit", `{"status":{"hard":{"pods":"4","requests.cpu":"2","requests.memory":"1G"},"used":{"pods":"1","requests.cpu":"0.5","requests.memory":"128Mi"}}}`,
			Usage{Pods: "1/4", CPU: "500m/2", Memory: "134217728/1G"}},
		{"used without a limit", `{"status":{"hard":{"pods":"4"},"used":{"pods":"1","requests.cpu":"500m"}}}`, Usage{Pods: "1/4", CPU: "-"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var quota *Object
			if c.quota != "" {
				quota = &Object{}
				if err := json.Unmarshal([]byte(c.quota), quota); err != nil {
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(&c.want, quotaUsage(quota)); diff != "" {
				t.Errorf("usage (-want +got):\n%s", diff)
			}
		})
	}
}
