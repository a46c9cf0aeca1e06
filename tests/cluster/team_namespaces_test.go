package cluster_test

import (
	"strings"
	"testing"
	"time"
)

// TestOwnersDivideTheBudget (issue #52, items 4 and 6), by impersonation:
// an owner adds, changes and removes entries of spec.namespaces within the
// totals, which stay the platform's; the platform's maxNamespaces holds
// them; a removal is confirmed by annotation platform.labhub.io/remove-namespaces,
// the only annotation an owner may write, which never lists an entry that
// is there.
func TestOwnersDivideTheBudget(t *testing.T) {
	parallel(t)
	installOwnerAccess(t)
	installGuardrails(t)
	installLimits(t)
	s := suffix(t, 6)
	owner, name := "owner-"+s, "div-"+s
	createOwned(t, name, ownedBy(with(within(), "pods", 8, "cpu", "2"), owner))
	patch := func(p string) error {
		t.Helper()
		_, err := kubectl(t, "", append(as(owner), "patch", "teamspace", name, "--type=merge", "-p", p)...)
		return err
	}
	entries := func(list ...string) string { return `{"spec":{"namespaces":[` + strings.Join(list, ",") + `]}}` }
	dev, prod := `{"name":"dev","pods":1,"cpu":"100m"}`, `{"name":"prod","pods":3,"cpu":"1"}`

	if err := patch(entries(dev)); err != nil {
		t.Fatalf("the owner adding entry dev: %v", err)
	}
	if err := patch(entries(`{"name":"dev","pods":2,"cpu":"300m"}`, prod)); err != nil {
		t.Errorf("the owner moving shares and adding prod: %v", err)
	}
	wantRefusedBy(t, "the owner raising spec.pods", patch(`{"spec":{"pods":9}}`), "teamspace-owner-updates", "this update also changes spec.pods")
	if err := patch(entries(`{"name":"dev","pods":8,"cpu":"100m"}`)); err == nil || !strings.Contains(err.Error(), "spec.namespaces") {
		t.Errorf("the owner's shares above the totals: %v, want refused naming spec.namespaces", err)
	}
	four := entries(dev, `{"name":"a","pods":1,"cpu":"100m"}`, `{"name":"b","pods":1,"cpu":"100m"}`, `{"name":"c","pods":1,"cpu":"100m"}`)
	wantRefusedBy(t, "the owner's fourth namespace", patch(four), "teamspace-limits", "maxNamespaces")

	// Removal: the annotation never lists an entry that is there.
	confirm := func(v string) string { return `{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":"` + v + `"}}}` }
	var err error
	if !eventually(10*time.Second, 200*time.Millisecond, func() bool { err = patch(confirm("dev")); return err != nil }) {
		t.Fatal("the owner listing dev for removal while the entry is there: admitted")
	}
	wantRefusedBy(t, "the owner listing dev for removal while the entry is there", err, "teamspace-namespace-removal", "take it out of the annotation first")
	wantRefusedBy(t, "a malformed list", patch(confirm("Dev!")), "teamspace-namespace-removal", "must list entry names")
	both := `{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":"dev"}},"spec":{"namespaces":[` + prod + `]}}`
	if err := patch(both); err != nil {
		t.Errorf("the owner dropping dev and confirming its removal: %v", err)
	}
	wantRefusedBy(t, "dev again while the annotation lists it", patch(entries(prod, dev)), "teamspace-namespace-removal", "spec.namespaces has entry dev")
	if err := patch(`{"metadata":{"annotations":{"platform.labhub.io/remove-namespaces":null}}}`); err != nil {
		t.Errorf("the owner taking the annotation off: %v", err)
	}
	if err := patch(entries(prod, dev)); err != nil {
		t.Errorf("dev again once the annotation is off: %v", err)
	}
	wantRefusedBy(t, "another annotation", patch(`{"metadata":{"annotations":{"platform.labhub.io/protected":"false"}}}`),
		"teamspace-owner-updates", "metadata.annotations[platform.labhub.io/protected]")
}
