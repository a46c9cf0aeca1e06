package cluster_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/testenv"
)

// TestHandOverQuotas runs hack/deploy/hand-over-quotas.sh on quotas as the
// CompositeController made them before the DecoratorController (issue
// #54: a TeamSpace as controller, no mark) and as the DecoratorController
// of the namespace did (#55: the namespace as controller). team-quota and
// team-objects of a team namespace get its LimitRange as controller and
// the DecoratorController's mark, their limits and labels unchanged; a
// quota of another name and one handed over already are left as they are;
// a second run hands nothing over.
func TestHandOverQuotas(t *testing.T) {
	parallel(t)
	installCRD(t)
	name := "handover-" + suffix(t, 6)
	ns := teamspace.NamespaceName(name)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 2}), "create", "-f", "-")
	deleteOnCleanup(t, "teamspace", name)
	tsUID := mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.metadata.uid}")
	mustKubectl(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"`+ns+`","labels":{"`+v1alpha1.TeamSpaceLabel+`":"`+name+`"}}}`, "create", "-f", "-")
	deleteOnCleanup(t, "namespace", ns)
	nsUID := mustKubectl(t, "", "get", "namespace", ns, "-o", "jsonpath={.metadata.uid}")
	mustKubectl(t, `{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"`+teamspace.LimitRangeName+`","namespace":"`+ns+`","labels":{"`+v1alpha1.TeamSpaceLabel+`":"`+name+`"}},`+
		`"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"100m"}}]}}`, "create", "-f", "-")
	lrUID := mustKubectl(t, "", "-n", ns, "get", "limitrange", teamspace.LimitRangeName, "-o", "jsonpath={.metadata.uid}")

	byNamespace := `[{"apiVersion":"v1","kind":"Namespace","name":"` + ns + `","uid":"` + nsUID + `","controller":true,"blockOwnerDeletion":true}]`
	byTeamSpace := `[{"apiVersion":"platform.labhub.io/v1alpha1","kind":"TeamSpace","name":"` + name + `","uid":"` + tsUID + `","controller":true,"blockOwnerDeletion":true}]`
	quota := func(qname, owners, hard string) {
		mustKubectl(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"`+qname+`","namespace":"`+ns+`",`+
			`"labels":{"`+v1alpha1.TeamSpaceLabel+`":"`+name+`"},"annotations":{"`+teamspace.LastAppliedAnnotation+`":"{}"},"ownerReferences":`+owners+`},`+
			`"spec":{"hard":`+hard+`}}`, "create", "-f", "-")
	}
	quota("team-quota", byTeamSpace, `{"pods":"2","requests.cpu":"1"}`)
	quota("team-objects", byNamespace, `{"secrets":"10"}`)
	quota("other", byTeamSpace, `{"pods":"9"}`)

	run := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r := testenv.Run(ctx, "", nil, nil, "bash", deployFile(t, "hand-over-quotas.sh"))
		if r.Err != nil {
			t.Fatalf("hand-over-quotas.sh: %s", r)
		}
		return r.Stderr
	}
	if out := run(); !strings.Contains(out, "handed 2 quota(s) over to DecoratorController teamspace-quotas") {
		t.Errorf("first run said %q, want 2 handed over", out)
	}
	type meta struct {
		Metadata struct {
			Labels          map[string]string `json:"labels"`
			Annotations     map[string]string `json:"annotations"`
			OwnerReferences []struct {
				Kind, Name, UID string
				Controller      bool
			} `json:"ownerReferences"`
		} `json:"metadata"`
		Spec struct {
			Hard map[string]string `json:"hard"`
		} `json:"spec"`
	}
	get := func(qname string) meta {
		t.Helper()
		var m meta
		if err := json.Unmarshal([]byte(mustKubectl(t, "", "get", "resourcequota", qname, "-n", ns, "-o", "json")), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for qname, hard := range map[string]string{"team-quota": "2", "team-objects": ""} {
		m := get(qname)
		refs := m.Metadata.OwnerReferences
		if len(refs) != 1 || refs[0].Kind != "LimitRange" || refs[0].Name != teamspace.LimitRangeName || refs[0].UID != lrUID || !refs[0].Controller {
			t.Errorf("%s: owners %+v, want LimitRange %s (uid %s) as controller", qname, refs, teamspace.LimitRangeName, lrUID)
		}
		if m.Metadata.Annotations["metacontroller.k8s.io/decorator-controller"] != teamspace.QuotasControllerName {
			t.Errorf("%s: annotations %v, want the DecoratorController's mark", qname, m.Metadata.Annotations)
		}
		if m.Metadata.Labels[v1alpha1.TeamSpaceLabel] != name || m.Metadata.Annotations[teamspace.LastAppliedAnnotation] != "{}" || m.Spec.Hard["pods"] != hard {
			t.Errorf("%s changed beyond its controller: labels %v, annotations %v, hard %v", qname, m.Metadata.Labels, m.Metadata.Annotations, m.Spec.Hard)
		}
	}
	if refs := get("other").Metadata.OwnerReferences; len(refs) != 1 || refs[0].Kind != "TeamSpace" {
		t.Errorf("quota other: owners %+v, want left to its TeamSpace (not a name the DecoratorController makes)", refs)
	}
	if out := run(); !strings.Contains(out, "handed 0 quota(s)") {
		t.Errorf("second run said %q, want nothing handed over", out)
	}
}
