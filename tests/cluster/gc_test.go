package cluster_test

import (
	"encoding/json"
	"testing"
	"time"
)

// TestGarbageCollection: a namespace whose controller owner is a TeamSpace
// goes away when the TeamSpace is deleted, through the cluster's garbage
// collector, as the team namespaces do once Metacontroller let go of them.
func TestGarbageCollection(t *testing.T) {
	parallel(t)
	checkGarbageCollection(t)
}

// checkGarbageCollection is TestGarbageCollection's check, which
// TestGuardrailsLeaveGCAlone makes with the guard rails installed.
func checkGarbageCollection(t *testing.T) {
	t.Helper()
	installCRD(t)

	s := suffix(t, 8)
	owner, nsName := "gc-"+s, "team-gc-"+s
	deleteOnCleanup(t, "namespace", nsName)
	deleteOnCleanup(t, "teamspace", owner)

	mustKubectl(t, teamSpace(owner, map[string]any{"pods": 1}), "create", "-f", "-")
	uid := mustKubectl(t, "", "get", "teamspace", owner, "-o", "jsonpath={.metadata.uid}")
	if uid == "" {
		t.Fatal("no uid")
	}
	ns, err := json.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata": map[string]any{
			"name": nsName,
			"ownerReferences": []any{map[string]any{
				"apiVersion":         groupVersion,
				"kind":               "TeamSpace",
				"name":               owner,
				"uid":                uid,
				"controller":         true,
				"blockOwnerDeletion": true,
			}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, string(ns), "create", "-f", "-")

	// The garbage collector must not take the namespace while its owner is
	// there (it checks the owner by uid).
	time.Sleep(2 * time.Second)
	if _, found := getObject(t, "namespace", nsName); !found {
		t.Fatalf("namespace %s vanished while its owner still exists", nsName)
	}

	start := time.Now()
	mustKubectl(t, "", "delete", "teamspace", owner, "--wait=false")
	terminating := time.Duration(0)
	gone := eventually(60*time.Second, 500*time.Millisecond, func() bool {
		obj, found := getObject(t, "namespace", nsName)
		if !found {
			return true
		}
		if terminating == 0 && str(field(obj, "metadata", "deletionTimestamp")) != "" {
			terminating = time.Since(start)
		}
		return false
	})
	if !gone {
		if terminating != 0 {
			t.Fatalf("namespace %s is still terminating 60s after its TeamSpace was deleted (terminating after %s)", nsName, terminating.Round(time.Millisecond))
		}
		t.Fatalf("namespace %s is still there 60s after its TeamSpace was deleted: the garbage collector did not act", nsName)
	}
	t.Logf("namespace gone %s after deleting its TeamSpace (terminating after %s)",
		time.Since(start).Round(time.Millisecond), terminating.Round(time.Millisecond))
}
