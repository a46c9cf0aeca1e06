package cluster_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/hook/teamspace"
)

// shippedDefaultObjects is spec.objects as the shipped defaultObjects
// fills it in (hack/deploy/limits-config.yaml).
var shippedDefaultObjects = map[string]any{
	"configmaps": 50, "persistentvolumeclaims": 5, "replicationcontrollers": 0, "resourcequotas": 2,
	"secrets": 50, "services": 10, "services.loadbalancers": 0, "services.nodeports": 0,
}

// shippedMaxObjects is the shipped maxObjects.
var shippedMaxObjects = map[string]any{
	"configmaps": 200, "persistentvolumeclaims": 20, "replicationcontrollers": 10, "resourcequotas": 2,
	"secrets": 200, "services": 50, "services.loadbalancers": 2, "services.nodeports": 5,
}

// TestObjectDefaultsAndMaxima (issue #41, item 3): a requester's new
// TeamSpace that leaves spec.ephemeralStorage or kinds of spec.objects out
// gets the platform's defaults (requested-by.yaml,
// teamspace-default-objects), kinds it sets are kept; above
// maxEphemeralStorage or maxObjects it is refused naming the field, the
// value and the key; a kind maxObjects bounds left uncounted is refused
// once no default fills it in. Defaults are defaults whoever creates the
// TeamSpace (issue #51, item 5): an exempt user's, and system:masters'
// seed-style one, get them too; an exempt user is not held to the maxima
// and keeps any value set.
func TestObjectDefaultsAndMaxima(t *testing.T) {
	alone(t, changesLimits)
	installLimits(t)
	s, user := limitsCast(t, "objects")
	req, platform := as(user), as("platform-"+s, platformGroup)
	dryRun := func(who []string, spec map[string]any) (map[string]any, error) {
		out, err := kubectl(t, teamSpace("obj-probe-"+s, spec), append(who, "create", "--dry-run=server", "-o", "json", "-f", "-")...)
		if err != nil {
			return nil, err
		}
		var obj map[string]any
		if err := json.Unmarshal([]byte(out), &obj); err != nil {
			t.Fatal(err)
		}
		return obj["spec"].(map[string]any), nil
	}
	jsonOf := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	// What a requester leaves to the defaults.
	bare := with(within(), "ephemeralStorage", nil, "objects", nil)

	var spec map[string]any
	var err error
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool {
		spec, err = dryRun(req, bare)
		return err == nil && spec["ephemeralStorage"] == "4Gi"
	}) {
		t.Fatalf("a requester's TeamSpace without ephemeralStorage: %v, %v; want the shipped default 4Gi", spec, err)
	}
	if got, want := jsonOf(spec["objects"]), jsonOf(shippedDefaultObjects); got != want {
		t.Errorf("a requester's TeamSpace without objects: objects %s, want the shipped defaults %s", got, want)
	}
	spec, err = dryRun(req, with(bare, "ephemeralStorage", "1Gi", "objects", map[string]any{"secrets": 7}))
	if err != nil {
		t.Fatal(err)
	}
	if spec["ephemeralStorage"] != "1Gi" || jsonOf(spec["objects"]) != jsonOf(with(shippedDefaultObjects, "secrets", 7)) {
		t.Errorf("a requester's own ephemeralStorage 1Gi and secrets 7: got %v and %s, want them kept and the other kinds filled in", spec["ephemeralStorage"], jsonOf(spec["objects"]))
	}
	seed := map[string]any{"pods": 4, "cpu": "1", "owners": []any{map[string]any{"kind": "User", "name": "ann"}}}
	for who, spec := range map[string]map[string]any{"an exempt user": bare, "system:masters (a seed-style spec)": seed} {
		args := platform
		if strings.HasPrefix(who, "system:masters") {
			args = nil
		}
		got, err := dryRun(args, spec)
		if err != nil || got["ephemeralStorage"] != "4Gi" || jsonOf(got["objects"]) != jsonOf(shippedDefaultObjects) {
			t.Errorf("%s's TeamSpace: %v, %v; want the shipped defaults filled in too", who, got, err)
		}
	}

	_, err = dryRun(req, with(bare, "ephemeralStorage", "30Gi"))
	wantLimitRefusal(t, "ephemeralStorage above the maximum", err, `spec.ephemeralStorage: "30Gi" is above the platform limit of "20Gi" (key maxEphemeralStorage of `+limitsSource+")")
	_, err = dryRun(req, with(bare, "objects", map[string]any{"secrets": 500, "services.nodeports": 6}))
	wantLimitRefusal(t, "objects above the maximum", err, "spec.objects: secrets 500 is above the platform limit of 200, services.nodeports 6 is above the platform limit of 5 (key maxObjects of "+limitsSource+")")
	spec, err = dryRun(platform, with(bare, "ephemeralStorage", "30Gi", "objects", map[string]any{"secrets": 500}))
	wantAccepted(t, "an exempt user above the maxima", err)
	if err == nil && (spec["ephemeralStorage"] != "30Gi" || jsonOf(spec["objects"]) != jsonOf(with(shippedDefaultObjects, "secrets", 500))) {
		t.Errorf("an exempt user's own ephemeralStorage 30Gi and secrets 500: got %v and %s, want them kept and the other kinds filled in", spec["ephemeralStorage"], jsonOf(spec["objects"]))
	}

	t.Cleanup(func() { resetLimitsConfig(t) })
	setLimit(t, "defaultObjects", "")
	setLimit(t, "defaultEphemeralStorage", "")
	settled(t, bare, "spec.ephemeralStorage: unset, which leaves ephemeral storage in the namespace unlimited")
	_, err = dryRun(req, with(bare, "ephemeralStorage", "1Gi"))
	wantLimitRefusal(t, "objects left uncounted", err, "spec.objects: configmaps unset (not counted) is above the platform limit of 200")
	setLimit(t, "maxObjects", "")
	setLimit(t, "maxEphemeralStorage", "")
	if !eventually(10*time.Second, 100*time.Millisecond, func() bool { _, err = dryRun(req, bare); return err == nil }) {
		t.Errorf("without maxima or defaults (a ConfigMap from before these keys): %v, want admitted as before", err)
	}
}

// TestQuotaCountsObjects (issue #41, item 3): in the namespace of a
// requester's TeamSpace with the shipped defaults, the owner's first pod
// with no resources is admitted and gets its share of ephemeral storage
// (request and limit) from LimitRange team-defaults; team-objects counts
// it; objects beyond a count are refused by the API server's quota, naming
// team-objects.
func TestQuotaCountsObjects(t *testing.T) {
	parallel(t)
	installLimits(t)
	installOwnerAccess(t)
	s, user := limitsCast(t, "counted")
	owner := "owner-" + s
	name := "counted-" + s
	ns := teamspace.NamespaceName(name)
	createOwnedAs(t, as(user), name, ownedBy(with(within(), "ephemeralStorage", nil, "objects", map[string]any{"secrets": 2}), owner))

	if out := mustKubectl(t, "", "-n", ns, "get", "resourcequota", "team-objects", "-o", "jsonpath={.spec.hard}"); !strings.Contains(out, `"requests.ephemeral-storage":"4Gi"`) || !strings.Contains(out, `"secrets":"2"`) {
		t.Fatalf("team-objects hard = %s, want requests.ephemeral-storage 4Gi and secrets 2", out)
	}
	if out := mustKubectl(t, "", "-n", ns, "get", "resourcequota", "team-quota", "-o", "jsonpath={.spec.hard}"); out != `{"pods":"2","requests.cpu":"500m","requests.memory":"1Gi"}` {
		t.Errorf("team-quota hard = %s, want exactly pods, requests.cpu and requests.memory", out)
	}
	// The quota controller must have counted before admission enforces.
	if !eventually(30*time.Second, 250*time.Millisecond, func() bool {
		out, _ := kubectl(t, "", "-n", ns, "get", "resourcequota", "team-objects", "-o", "jsonpath={.status.used.secrets}")
		return out == "0"
	}) {
		t.Fatal("team-objects has not counted the namespace's secrets after 30s")
	}

	pod := restrictedPod("first", nil)
	out, err := kubectl(t, pod, append(as(owner), "-n", ns, "create", "-o", "jsonpath={.spec.containers[0].resources}", "-f", "-")...)
	if err != nil {
		t.Fatalf("the owner's first pod with no resources: %v", err)
	}
	if !strings.Contains(out, `"limits":{"ephemeral-storage":"2Gi"}`) || !strings.Contains(out, `"ephemeral-storage":"2Gi"`) {
		t.Errorf("the first pod's resources = %s, want ephemeral-storage 2Gi (4Gi / 2 pods) as request and limit", out)
	}
	if !eventually(30*time.Second, 250*time.Millisecond, func() bool {
		out, _ := kubectl(t, "", "-n", ns, "get", "resourcequota", "team-objects", "-o", "jsonpath={.status.used.requests\\.ephemeral-storage}")
		return out == "2Gi"
	}) {
		t.Error("team-objects does not count the first pod's ephemeral storage after 30s")
	}

	secret := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s%d"},"stringData":{"k":"v"}}`, i)
	}
	for i := range 2 {
		if _, err := kubectl(t, secret(i), append(as(owner), "-n", ns, "create", "-f", "-")...); err != nil {
			t.Fatalf("secret %d of 2: %v", i+1, err)
		}
	}
	_, err = kubectl(t, secret(2), append(as(owner), "-n", ns, "create", "-f", "-")...)
	if err == nil || !strings.Contains(err.Error(), "exceeded quota: team-objects") || !strings.Contains(err.Error(), "limited: secrets=2") {
		t.Errorf("a third secret with secrets: 2: %v, want refused by quota team-objects", err)
	}
}

// TestSeedKeepsTeamQuota (issue #51, item 5): a seed-style TeamSpace
// ({pods: 4, cpu: "1"} and an owner) that system:masters creates gets the
// platform's object counts and ephemeral storage in ResourceQuota
// team-objects, so its owners cannot fill etcd with Secrets, and its
// team-quota is exactly what the seed asks, as before.
func TestSeedKeepsTeamQuota(t *testing.T) {
	parallel(t)
	installLimits(t)
	installOwnerAccess(t)
	name := "seed-" + suffix(t, 6)
	ns := teamspace.NamespaceName(name)
	createOwned(t, name, map[string]any{"pods": 4, "cpu": "1", "owners": []any{map[string]any{"kind": "User", "name": "ann"}}})
	quota, _ := getObject(t, "resourcequota", "team-quota", "-n", ns)
	if got, want := fmt.Sprint(field(quota, "spec", "hard")), fmt.Sprint(map[string]any{"pods": "4", "requests.cpu": "1"}); got != want {
		t.Errorf("the seed's team-quota: spec.hard %s, want %s as the seed asks", got, want)
	}
	objects, _ := getObject(t, "resourcequota", teamspace.ObjectsQuotaName, "-n", ns)
	hard, _ := field(objects, "spec", "hard").(map[string]any)
	if str(hard["secrets"]) != "50" || str(hard["requests.ephemeral-storage"]) != "4Gi" {
		t.Errorf("the seed's %s: spec.hard %v, want secrets 50 and requests.ephemeral-storage 4Gi (defaultObjects, defaultEphemeralStorage)", teamspace.ObjectsQuotaName, hard)
	}
}
