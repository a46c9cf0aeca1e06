package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/archive"
	"github.com/labhub/teamspace/hook/teamspace"
	"github.com/labhub/teamspace/tests/s3store"
	"github.com/labhub/teamspace/tests/testenv"
)

const engineFinalizer = "metacontroller.io/compositecontroller-teamspace"

// runStatus runs hack/deploy/status.sh with extra environment and arguments.
func runStatus(t *testing.T, env []string, args ...string) testenv.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	script := deployFile(t, "status.sh")
	return testenv.Run(ctx, "", append([]string{"DESTDIR=", "TEAMSPACE_ARCHIVE_DIR=", "HOOK_BIN=" + testenv.HookBinary(t)}, env...), nil, "bash", append([]string{script}, args...)...)
}

// statusRow finds the row of the report starting with first (its first
// column) after the line starting with section, and splits it into fields.
func statusRow(t *testing.T, out, section, first string) []string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "\n"+section)
	if !ok && !strings.HasPrefix(out, section) {
		t.Fatalf("no section %q in the report:\n%s", section, out)
	}
	if !ok {
		rest = out
	}
	for _, line := range strings.Split(rest, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == first {
			return f
		}
	}
	t.Fatalf("no row %q under %q in the report:\n%s", first, section, out)
	return nil
}

// TestStatus runs hack/deploy/status.sh against TeamSpaces in every state it
// reports (Ready True/False, protected, deleting with its namespace
// Terminating or gone) and an archive with records of both file name forms
// and a file that is not a record.
func TestStatus(t *testing.T) {
	parallel(t)
	installCRD(t)

	s := suffix(t, 6)
	ready, failing, prot, del, gone := "st-ready-"+s, "st-fail-"+s, "st-prot-"+s, "st-del-"+s, "st-gone-"+s
	hold := "example.com/status-test-hold"

	// Cleanup runs last-registered first: finalizers go before the deletes.
	for _, n := range []string{ready, failing, prot, del, gone} {
		deleteOnCleanup(t, "teamspace", n)
	}
	deleteOnCleanup(t, "namespace", "team-"+del)
	t.Cleanup(func() {
		_, _ = kubectl(t, "", "annotate", "teamspace", prot, protectedKey+"-")
		for _, n := range []string{del, gone} {
			_, _ = kubectl(t, "", "patch", "teamspace", n, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
		_, _ = kubectl(t, "", "patch", "namespace", "team-"+del, "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
	})

	for _, n := range []string{ready, failing} {
		mustKubectl(t, teamSpace(n, map[string]any{"pods": 1}), "create", "-f", "-")
	}
	mustKubectl(t, annotated(teamSpace(prot, map[string]any{"pods": 1}), protectedKey, "true"), "create", "-f", "-")
	for _, n := range []string{del, gone} {
		m := fmt.Sprintf(`{"apiVersion":%q,"kind":"TeamSpace","metadata":{"name":%q,"finalizers":[%q]},"spec":{"pods":1}}`, groupVersion, n, engineFinalizer)
		mustKubectl(t, m, "create", "-f", "-")
	}
	setReady := func(name, status, reason string) {
		p := fmt.Sprintf(`{"status":{"conditions":[{"type":"Ready","status":%q,"reason":%q,"message":"set by TestStatus","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, status, reason)
		mustKubectl(t, "", "patch", "teamspace", name, "--subresource=status", "--type=merge", "-p", p)
	}
	setReady(ready, "True", "Ready")
	setReady(failing, "False", "QuotaMismatch")
	setReady(prot, "True", "Ready")
	setReady(del, "False", "Deleting")

	// team-<del> exists and is held Terminating by a finalizer of ours.
	mustKubectl(t, fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-%s","finalizers":[%q]}}`, del, hold), "create", "-f", "-")
	mustKubectl(t, "", "delete", "teamspace", del, gone, "--wait=false")
	mustKubectl(t, "", "delete", "namespace", "team-"+del, "--wait=false")
	if !eventually(30*time.Second, 200*time.Millisecond, func() bool {
		out, _ := kubectl(t, "", "get", "namespace", "team-"+del, "-o", "jsonpath={.status.phase}")
		return out == "Terminating"
	}) {
		t.Fatalf("namespace team-%s is not Terminating", del)
	}

	// The archive: two records of one name (both file name forms) written
	// by the hook's own code, the later one first, and a file that is not
	// a record, older than both.
	dir := t.TempDir()
	a, err := archive.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	pods := 3
	old := "st-old-" + s
	uidLate, uidEarly := "11111111-1111-4111-8111-"+s+"000000", "22222222-2222-4222-8222-"+s+"000000"
	late := metav1.NewTime(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	early := metav1.NewTime(time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC))
	fileLate, err := a.Store(context.Background(), old, uidLate, teamspace.Record{Name: old, UID: uidLate, Pods: &pods, Namespace: "team-" + old, DeletionTimestamp: &late})
	if err != nil {
		t.Fatal(err)
	}
	fileEarly, err := a.Store(context.Background(), old, uidEarly, teamspace.Record{Name: old, UID: uidEarly, Pods: &pods, Namespace: "team-" + old, DeletionTimestamp: &early})
	if err != nil {
		t.Fatal(err)
	}
	if fileLate != old+".json" || fileEarly != old+"."+uidEarly+".json" {
		t.Fatalf("archive file names %s, %s", fileLate, fileEarly)
	}
	garbage := filepath.Join(dir, "broken.json")
	if err := os.WriteFile(garbage, []byte("{\"name\": \"broken\", truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	garbageTime := time.Date(2025, 5, 5, 5, 5, 5, 0, time.UTC)
	if err := os.Chtimes(garbage, garbageTime, garbageTime); err != nil {
		t.Fatal(err)
	}

	// A team-* namespace no TeamSpace owns (made by hand).
	squat := "team-st-squat-" + s
	mustKubectl(t, "", "create", "namespace", squat)
	deleteOnCleanup(t, "namespace", squat)
	// Access in it beside spec.owners: a RoleBinding of a person, a token
	// Secret of a ServiceAccount.
	mustKubectl(t, "", "-n", squat, "create", "rolebinding", "extra", "--clusterrole=view", "--user=bob-"+s, "--serviceaccount="+squat+":ci")
	mustKubectl(t, "", "-n", squat, "create", "serviceaccount", "ci")
	mustKubectl(t, `{"apiVersion":"v1","kind":"Secret","type":"kubernetes.io/service-account-token","metadata":{"name":"ci-token","annotations":{"kubernetes.io/service-account.name":"ci"}}}`, "-n", squat, "create", "-f", "-")

	r := runStatus(t, nil, "--archive-dir", dir)
	if r.Err != nil {
		t.Fatalf("status.sh: %s", r)
	}
	out := r.Stdout
	t.Logf("status.sh:\n%s", out)

	// NAME READY REASON AGE PROTECTED DELETING...
	for _, c := range []struct {
		name, ready, reason, protected, deleting string
	}{
		{ready, "True", "Ready", "no", "-"},
		{failing, "False", "QuotaMismatch", "no", "-"},
		{prot, "True", "Ready", "yes", "-"},
		{del, "False", "Deleting", "no", "finalizers: " + engineFinalizer + "; namespace team-" + del + " Terminating"},
		{gone, "-", "-", "no", "finalizers: " + engineFinalizer + "; namespace team-" + gone + " gone"},
	} {
		f := statusRow(t, out, "TeamSpaces", c.name)
		if len(f) < 6 {
			t.Errorf("row %s: %q", c.name, f)
			continue
		}
		if f[1] != c.ready || f[2] != c.reason || f[4] != c.protected {
			t.Errorf("row %s: READY %s REASON %s PROTECTED %s, want %s %s %s", c.name, f[1], f[2], f[4], c.ready, c.reason, c.protected)
		}
		if age := f[3]; age == "-" || !strings.ContainsAny(age[len(age)-1:], "smhd") {
			t.Errorf("row %s: AGE %q", c.name, age)
		}
		deleting := strings.Join(f[5:], " ")
		if c.deleting == "-" {
			if deleting != "-" {
				t.Errorf("row %s: DELETING %q, want -", c.name, deleting)
			}
		} else if !strings.HasPrefix(deleting, "since ") || !strings.HasSuffix(deleting, c.deleting) {
			t.Errorf("row %s: DELETING %q, want since <time>; %s", c.name, deleting, c.deleting)
		}
	}

	if f := statusRow(t, out, "team-* namespaces no TeamSpace owns", squat); len(f) != 1 {
		t.Errorf("unowned namespace row %q", f)
	}
	if got, want := strings.Join(statusRow(t, out, "Access in team namespaces beside spec.owners", squat), " "), squat+" extra ClusterRole view User bob-"+s+", ServiceAccount "+squat+"/ci"; got != want {
		t.Errorf("access row %q, want %q", got, want)
	}
	if got, want := strings.Join(statusRow(t, out, "ServiceAccount token Secrets in team namespaces", squat), " "), squat+" ci-token ci"; got != want {
		t.Errorf("token row %q, want %q", got, want)
	}

	// NAME UID FILE DELETED AT, oldest first.
	archiveRows := map[string][]string{}
	for _, f := range []string{fileLate, fileEarly, "broken.json"} {
		_, rest, _ := strings.Cut(out, "\nArchive records")
		for _, line := range strings.Split(rest, "\n") {
			if fl := strings.Fields(line); len(fl) >= 4 && fl[2] == f {
				archiveRows[f] = fl
			}
		}
		if archiveRows[f] == nil {
			t.Fatalf("no archive row for %s in:\n%s", f, out)
		}
	}
	for f, want := range map[string]string{
		fileLate:      old + " " + uidLate + " " + fileLate + " 2026-03-02T10:00:00Z",
		fileEarly:     old + " " + uidEarly + " " + fileEarly + " 2026-03-01T09:30:00Z",
		"broken.json": "broken (unreadable) broken.json 2025-05-05T05:05:05Z (file mtime)",
	} {
		if got := strings.Join(archiveRows[f], " "); got != want {
			t.Errorf("archive row %s: %q, want %q", f, got, want)
		}
	}
	iBroken, iEarly, iLate := strings.Index(out, " broken.json "), strings.Index(out, " "+fileEarly+" "), strings.Index(out, " "+fileLate+" ")
	if !(iBroken < iEarly && iEarly < iLate) {
		t.Errorf("archive rows not sorted by time (broken %d, early %d, late %d)", iBroken, iEarly, iLate)
	}
	if !strings.Contains(out, "3 records, 1 unreadable") {
		t.Errorf("no archive summary \"3 records, 1 unreadable\" in:\n%s", out)
	}

	// A missing or empty archive directory: one line, the report succeeds.
	empty := t.TempDir()
	for d, want := range map[string]string{
		filepath.Join(empty, "nope"): "does not exist",
		empty:                        "holds no records",
	} {
		r := runStatus(t, []string{"TEAMSPACE_ARCHIVE_DIR=" + d})
		if r.Err != nil || !strings.Contains(r.Stdout, d+" "+want) {
			t.Errorf("status.sh with archive %s: want %q\n%s", d, want, r)
		}
	}

	// No API server: a one-line error, non-zero.
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"https://" + testenv.FreeAddr(t) + "\"}}]\n" +
		"users: [{name: u, user: {token: x}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n"
	if err := os.WriteFile(bad, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	r = runStatus(t, nil, "--kubeconfig", bad, "--archive-dir", dir)
	if r.Err == nil || r.Stdout != "" || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 ||
		!strings.Contains(r.Stderr, "cannot reach the API server") {
		t.Errorf("status.sh without an API server: want exit 1 and one line on stderr\n%s", r)
	}
}

// TestStatusListsTheBucket: given the hook's --archive-s3-* settings,
// status.sh lists the records of the bucket's folder as it lists a
// directory's: oldest first, a non-record marked, other folders left out;
// a bucket it cannot read is one line, and the report goes on.
func TestStatusListsTheBucket(t *testing.T) {
	parallel(t)
	srv := s3store.Start(t)
	ctx := context.Background()
	a, err := archive.OpenS3(ctx, srv.Config("cluster-a"))
	if err != nil {
		t.Fatal(err)
	}
	pods := 2
	late := metav1.NewTime(time.Date(2026, 4, 2, 10, 0, 0, 0, time.UTC))
	early := metav1.NewTime(time.Date(2026, 4, 1, 9, 0, 0, 0, time.UTC))
	for _, r := range []teamspace.Record{
		{Name: "s3-late", UID: "33333333-3333-4333-8333-333333333333", Pods: &pods, Namespace: "team-s3-late", DeletionTimestamp: &late},
		{Name: "s3-early", UID: "44444444-4444-4444-8444-444444444444", Pods: &pods, Namespace: "team-s3-early", DeletionTimestamp: &early},
	} {
		if _, err := a.Store(ctx, r.Name, r.UID, r); err != nil {
			t.Fatal(err)
		}
	}
	other, err := archive.OpenS3(ctx, srv.Config("cluster-b"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Store(ctx, "elsewhere", "55555555-5555-4555-8555-555555555555", teamspace.Record{Name: "elsewhere", UID: "55555555-5555-4555-8555-555555555555"}); err != nil {
		t.Fatal(err)
	}
	// Not a record, and older than both (its time is the object's).
	broken := filepath.Join(srv.Root, srv.Bucket, "cluster-a", "broken.json")
	if err := os.WriteFile(broken, []byte("{truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	brokenTime := time.Date(2025, 5, 5, 5, 5, 5, 0, time.UTC)
	if err := os.Chtimes(broken, brokenTime, brokenTime); err != nil {
		t.Fatal(err)
	}
	flags := append(srv.Flags("cluster-a"), "--archive-dir", t.TempDir())
	r := runStatus(t, nil, flags...)
	if r.Err != nil {
		t.Fatalf("status.sh: %s", r)
	}
	out := r.Stdout
	t.Logf("status.sh:\n%s", out)
	_, records, ok := strings.Cut(out, "Archive records (bucket "+srv.Bucket+"/cluster-a at "+srv.Endpoint+"):\n")
	if !ok {
		t.Fatalf("no bucket section in the report:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(records), "\n")
	want := []string{"NAME", "broken", "s3-early", "s3-late"}
	if len(lines) != len(want)+1 {
		t.Fatalf("records section %q, want a header, 3 rows and a count", lines)
	}
	for i, w := range want {
		if f := strings.Fields(lines[i]); len(f) == 0 || f[0] != w {
			t.Errorf("line %d = %q, want it to start with %s", i, lines[i], w)
		}
	}
	if !strings.Contains(lines[1], "(unreadable)") || !strings.Contains(lines[1], "2025-05-05T05:05:05Z (file mtime)") || !strings.Contains(lines[2], "s3-early.44444444-4444-4444-8444-444444444444.json") || !strings.Contains(lines[3], "2026-04-02T10:00:00Z") {
		t.Errorf("rows %q", lines[1:4])
	}
	if strings.Contains(out, "elsewhere") {
		t.Errorf("a record of another folder is listed:\n%s", out)
	}
	if !strings.Contains(lines[4], "3 records, 1 unreadable") {
		t.Errorf("count line %q", lines[4])
	}

	srv.Stop(t)
	r = runStatus(t, nil, flags...)
	if r.Err != nil || !strings.Contains(r.Stdout, "cannot read the bucket: ") || !strings.Contains(r.Stdout, "TeamSpaces") {
		t.Errorf("status.sh with the store stopped: %s; want the report and one line about the bucket", r)
	}
}
