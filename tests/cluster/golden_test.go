package cluster_test

import (
	"crypto/sha256"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"
)

// goldenAnswers lists the hook's golden answers, as "sync/<case>" →
// path of response.json.
func goldenAnswers(t *testing.T) (names []string, paths map[string]string) {
	t.Helper()
	paths = map[string]string{}
	for _, hook := range []string{"sync", "finalize"} {
		matches, err := filepath.Glob(filepath.Join(repoRoot(t), "tests", "testdata", hook, "*", "response.json"))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range matches {
			name := hook + "/" + filepath.Base(filepath.Dir(m))
			names = append(names, name)
			paths[name] = m
		}
	}
	sort.Strings(names)
	return names, paths
}

// kindOrder: namespaces first, then what lives in them.
func kindOrder(kind string) int {
	if kind == "Namespace" {
		return 0
	}
	return 1
}

// TestGoldenChildrenAccepted: every child in every golden answer of the
// hook is an object the real API server accepts as it is, stores as it is
// (reading it back gives every field the answer set, unchanged), and does
// not rewrite when the engine sends the same answer again (same
// resourceVersion after an identical update).
//
// Answers of different cases share names (namespace team-gamma), so the
// cases run one after another, each removing its objects (and waiting until
// they are gone) before the next; identical answers are checked once.
func TestGoldenChildrenAccepted(t *testing.T) {
	needCluster(t)
	names, paths := goldenAnswers(t)
	if len(names) == 0 {
		t.Fatal("no golden answers: want tests/testdata/{sync,finalize}/*/response.json")
	}
	seen := map[[32]byte]string{}
	total := 0
	for _, name := range names {
		raw, err := os.ReadFile(paths[name])
		if err != nil {
			t.Fatal(err)
		}
		var answer struct {
			Children *[]map[string]any `json:"children"`
		}
		if err := json.Unmarshal(raw, &answer); err != nil {
			t.Fatalf("%s: %v", paths[name], err)
		}
		if answer.Children == nil {
			t.Errorf("%s: no children array", paths[name])
			continue
		}
		children := *answer.Children
		total += len(children)
		key, _ := json.Marshal(children)
		sum := sha256.Sum256(key)
		if same, ok := seen[sum]; ok {
			t.Logf("%s: same children as %s, checked there", name, same)
			continue
		}
		seen[sum] = name
		t.Run(name, func(t *testing.T) { checkChildren(t, children) })
	}
	t.Logf("%d golden answers, %d children in all, %d distinct answers", len(names), total, len(seen))
}

func checkChildren(t *testing.T, children []map[string]any) {
	sort.SliceStable(children, func(i, j int) bool {
		return kindOrder(str(children[i]["kind"])) < kindOrder(str(children[j]["kind"]))
	})
	type created struct {
		ref  []string // kind name [-n namespace]
		json string
		obj  map[string]any
	}
	var made []created
	// Remove in reverse (a namespace takes its contents along) and wait
	// until gone, so that the next case may use the same names.
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			if _, err := kubectl(t, "", append([]string{"delete", "--ignore-not-found", "--wait=false"}, made[i].ref...)...); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
		for i := len(made) - 1; i >= 0; i-- {
			ref := made[i].ref
			if !eventually(120*time.Second, 250*time.Millisecond, func() bool {
				_, err := kubectl(t, "", append([]string{"get"}, ref...)...)
				return isNotFound(err)
			}) {
				t.Errorf("cleanup: %s still there after 120s", strings.Join(ref, " "))
			}
		}
	})

	for _, child := range children {
		kind, name := str(child["kind"]), str(field(child, "metadata", "name"))
		ns := str(field(child, "metadata", "namespace"))
		ref := []string{strings.ToLower(kind) + "." + apiGroup(str(child["apiVersion"])), name}
		if apiGroup(str(child["apiVersion"])) == "" {
			ref[0] = strings.ToLower(kind)
		}
		if ns != "" {
			ref = append(ref, "--namespace", ns)
		}
		desc := kind + " " + name
		if ns != "" {
			desc = kind + " " + ns + "/" + name
		}
		body, err := json.Marshal(child)
		if err != nil {
			t.Fatal(err)
		}

		if _, err := kubectl(t, string(body), "create", "--dry-run=server", "-f", "-"); err != nil {
			t.Fatalf("%s: server-side dry run refused it: %v", desc, err)
		}
		if _, err := kubectl(t, string(body), "create", "-f", "-"); err != nil {
			if !strings.Contains(err.Error(), "AlreadyExists") {
				t.Fatalf("%s: create: %v", desc, err)
			}
			// Another test (or package) holds the name: wait for it.
			t.Logf("%s exists already; waiting until it is gone", desc)
			if !eventually(120*time.Second, 500*time.Millisecond, func() bool {
				_, err := kubectl(t, string(body), "create", "-f", "-")
				return err == nil
			}) {
				t.Fatalf("%s: could not create it within 120s: name taken", desc)
			}
		}
		made = append(made, created{ref: ref, json: string(body), obj: child})
	}

	for _, c := range made {
		desc := strings.Join(c.ref, " ")
		got, found := getObject(t, c.ref...)
		if !found {
			t.Fatalf("%s: not found after create", desc)
		}
		// Everything the answer says is stored as it says it: the engine
		// compares what it reads back with its answer.
		if diff := subsetDiff(c.obj, got); diff != "" {
			t.Errorf("%s: read back differs from the answer:\n%s", desc, diff)
		}
		before := settledResourceVersion(t, c.ref, str(c.obj["kind"]))
		// The engine sends the same answer again: a full update with the
		// same content must not write anything.
		if _, err := kubectl(t, c.json, "replace", "-f", "-"); err != nil {
			t.Errorf("%s: replace with the same answer: %v", desc, err)
			continue
		}
		after := str(field(mustGet(t, c.ref), "metadata", "resourceVersion"))
		if after != before {
			again, _ := getObject(t, c.ref...)
			t.Errorf("%s: sending the same answer again changed resourceVersion %s → %s; stored now:\n%s",
				desc, before, after, mustJSON(again))
		}
	}
}

func apiGroup(apiVersion string) string {
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		return apiVersion[:i]
	}
	return ""
}

func mustGet(t *testing.T, ref []string) map[string]any {
	t.Helper()
	obj, found := getObject(t, ref...)
	if !found {
		t.Fatalf("%s: not found", strings.Join(ref, " "))
	}
	return obj
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// settledResourceVersion waits until controllers are done with a new
// object (the quota controller fills a ResourceQuota's status; the
// namespace's own controllers add service accounts and config maps that the
// quota then counts) and returns its resourceVersion.
func settledResourceVersion(t *testing.T, ref []string, kind string) string {
	t.Helper()
	var rv string
	stableSince := time.Now()
	ok := eventually(60*time.Second, 250*time.Millisecond, func() bool {
		obj := mustGet(t, ref)
		if kind == "ResourceQuota" && !reflect.DeepEqual(field(obj, "status", "hard"), field(obj, "spec", "hard")) {
			rv = ""
			return false
		}
		if cur := str(field(obj, "metadata", "resourceVersion")); cur != rv {
			rv, stableSince = cur, time.Now()
			return false
		}
		return time.Since(stableSince) >= 2*time.Second
	})
	if !ok {
		t.Fatalf("%s: did not settle within 60s (a ResourceQuota's status.hard must equal spec.hard, then no change for 2s)", strings.Join(ref, " "))
	}
	return rv
}

// subsetDiff reports the fields of want that got lacks or holds with
// another value; fields only got has (defaults, status, uid...) are fine.
func subsetDiff(want, got any) string {
	pruned := prune(want, got)
	if reflect.DeepEqual(want, pruned) {
		return ""
	}
	return "answer:\n" + mustJSON(want) + "\nstored (its fields only):\n" + mustJSON(pruned)
}

// prune returns got reduced to the shape of want: maps keep only want's
// keys, lists are pruned element by element.
func prune(want, got any) any {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return got
		}
		out := map[string]any{}
		for k, wv := range w {
			if gv, ok := g[k]; ok {
				out[k] = prune(wv, gv)
			}
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return got
		}
		out := make([]any, len(g))
		for i := range g {
			out[i] = prune(w[i], g[i])
		}
		return out
	default:
		return got
	}
}
