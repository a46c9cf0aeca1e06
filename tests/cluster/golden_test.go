package cluster_test

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// Answers of different cases share names (namespace team-gamma), so each
// case's children get a TeamSpace name of their own first (renamed), and
// the cases run side by side; each removes its objects (and waits until
// they are gone) when it ends. Identical answers are checked once.
func TestGoldenChildrenAccepted(t *testing.T) {
	parallel(t)
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
		t.Run(name, func(t *testing.T) {
			parallel(t)
			checkChildren(t, renamed(children, suffix(t, 5)))
		})
	}
	t.Logf("%d golden answers, %d children in all, %d distinct answers", len(names), total, len(seen))
}

// renamed returns a deep copy of an answer's children made for another
// TeamSpace name: the name the answer was made for (its Namespace child is
// team-<name>; else the TeamSpace label of a child) becomes <name>-<s>
// wherever a string value holds it as a word of its own (names,
// namespaces, label values, selectors, subjects, owner references), so
// that cases answered for the same TeamSpace do not share objects. Map
// keys are left alone. Children of no TeamSpace come back as they are.
func renamed(children []map[string]any, s string) []map[string]any {
	var old string
	for _, c := range children {
		if n := str(field(c, "metadata", "name")); str(c["kind"]) == "Namespace" && strings.HasPrefix(n, "team-") {
			old = strings.TrimPrefix(n, "team-")
			break
		}
		if l := str(field(c, "metadata", "labels", "platform.labhub.io/teamspace")); l != "" && old == "" {
			old = l
		}
	}
	var re *regexp.Regexp
	if old != "" {
		re = regexp.MustCompile(`\b` + regexp.QuoteMeta(old) + `\b`)
	}
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e)
			}
			return out
		case string:
			if re == nil {
				return v
			}
			return re.ReplaceAllString(v, old+"-"+s)
		default:
			return v
		}
	}
	out := make([]map[string]any, len(children))
	for i, c := range children {
		out[i] = walk(c).(map[string]any)
	}
	return out
}

func checkChildren(t *testing.T, children []map[string]any) {
	sort.SliceStable(children, func(i, j int) bool {
		return kindOrder(str(children[i]["kind"])) < kindOrder(str(children[j]["kind"]))
	})
	api := liveClient(t)
	type created struct {
		live liveRef
		obj  map[string]any
	}
	var made []created
	// Remove in reverse (a namespace takes its contents along) and wait
	// until gone, so that nothing is left behind.
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			if err := api.delete(made[i].live); err != nil {
				t.Logf("cleanup: %v", err)
			}
		}
		for i := len(made) - 1; i >= 0; i-- {
			c := made[i]
			if !eventually(120*time.Second, 250*time.Millisecond, func() bool {
				_, err := api.get(c.live)
				return apierrors.IsNotFound(err)
			}) {
				t.Errorf("cleanup: %s still there after 120s", c.live)
			}
		}
	})

	// A namespace the children are in that none of them is: one the
	// TeamSpace adopted (spec.namespaces[].adopt), which exists before
	// them; made here under a name of this test's own, the children
	// moved into it.
	namespaces := map[string]bool{}
	for _, child := range children {
		if str(child["kind"]) == "Namespace" {
			namespaces[str(field(child, "metadata", "name"))] = true
		}
	}
	adopted := map[string]string{}
	for _, child := range children {
		ns := str(field(child, "metadata", "namespace"))
		if ns == "" || namespaces[ns] {
			continue
		}
		if adopted[ns] == "" {
			adopted[ns] = ns + "-" + suffix(t, 6)
			mustKubectl(t, "", "create", "namespace", adopted[ns])
			deleteOnCleanup(t, "namespace", adopted[ns])
		}
		child["metadata"].(map[string]any)["namespace"] = adopted[ns]
	}
	// Through client-go, not kubectl: the same requests kubectl makes
	// (live.create, live.replace), and no process for each of the ~800
	// children, whose CPU made this test the package's last by minutes on
	// two cores (#74).
	for _, child := range children {
		live := refOf(&unstructured.Unstructured{Object: child})
		if err := api.create(child, true); err != nil {
			t.Fatalf("%s: server-side dry run refused it: %v", live, err)
		}
		if err := api.create(child, false); err != nil {
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: create: %v", live, err)
			}
			// Another test (or package) holds the name: wait for it.
			t.Logf("%s exists already; waiting until it is gone", live)
			if !eventually(120*time.Second, 500*time.Millisecond, func() bool {
				return api.create(child, false) == nil
			}) {
				t.Fatalf("%s: could not create it within 120s: name taken", live)
			}
		}
		made = append(made, created{live: live, obj: child})
	}

	for _, c := range made {
		got, err := api.get(c.live)
		if err != nil {
			t.Fatalf("%s: after create: %v", c.live, err)
		}
		// Everything the answer says is stored as it says it: the engine
		// compares what it reads back with its answer.
		if diff := subsetDiff(c.obj, got.Object); diff != "" {
			t.Errorf("%s: read back differs from the answer:\n%s", c.live, diff)
		}
	}
	refs := make([]liveRef, len(made))
	for i, c := range made {
		refs[i] = c.live
	}
	settled := settledResourceVersions(t, api, refs)
	for i, c := range made {
		// The engine sends the same answer again: a full update with the
		// same content must not write anything.
		if err := api.replace(c.obj); err != nil {
			t.Errorf("%s: replace with the same answer: %v", c.live, err)
			continue
		}
		again, err := api.get(c.live)
		if err != nil {
			t.Fatalf("%s: %v", c.live, err)
		}
		if after := again.GetResourceVersion(); after != settled[i] {
			t.Errorf("%s: sending the same answer again changed resourceVersion %s → %s; stored now:\n%s",
				c.live, settled[i], after, mustJSON(again.Object))
		}
	}
}

func mustJSON(v any) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// settledResourceVersions waits until controllers are done with new
// objects (the quota controller fills a ResourceQuota's status; the
// namespace's own controllers add service accounts and config maps that the
// quota then counts) and returns their resourceVersions: every
// ResourceQuota's status.hard equals its spec.hard, then none of them
// changes for 2s.
func settledResourceVersions(t *testing.T, api *live, refs []liveRef) []string {
	t.Helper()
	rvs := make([]string, len(refs))
	stableSince := time.Now()
	var why string
	ok := eventually(60*time.Second, 250*time.Millisecond, func() bool {
		changed := false
		for i, ref := range refs {
			obj, err := api.get(ref)
			if err != nil {
				why = fmt.Sprintf("%s: %v", ref, err)
				return false
			}
			if ref.kind == "ResourceQuota" && !reflect.DeepEqual(field(obj.Object, "status", "hard"), field(obj.Object, "spec", "hard")) {
				why = ref.String() + ": status.hard is not spec.hard yet"
				rvs[i], changed = "", true
				continue
			}
			if cur := obj.GetResourceVersion(); cur != rvs[i] {
				why = ref.String() + " changed"
				rvs[i], changed = cur, true
			}
		}
		if changed {
			stableSince = time.Now()
			return false
		}
		return time.Since(stableSince) >= 2*time.Second
	})
	if !ok {
		t.Fatalf("the children did not settle within 60s (a ResourceQuota's status.hard must equal spec.hard, then no change for 2s): last %s", why)
	}
	return rvs
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

// TestRenamed: renamed makes the answer's TeamSpace name its own wherever a
// value holds it as a word, and nothing else.
func TestRenamed(t *testing.T) {
	in := []map[string]any{
		{"kind": "Namespace", "metadata": map[string]any{"name": "team-gamma", "labels": map[string]any{"platform.labhub.io/teamspace": "gamma", "gamma": "gammas"}}},
		{"kind": "ClusterRole", "metadata": map[string]any{"name": "teamspace-owner-gamma", "ownerReferences": []any{map[string]any{"name": "gamma"}}}},
	}
	want := []map[string]any{
		{"kind": "Namespace", "metadata": map[string]any{"name": "team-gamma-x1", "labels": map[string]any{"platform.labhub.io/teamspace": "gamma-x1", "gamma": "gammas"}}},
		{"kind": "ClusterRole", "metadata": map[string]any{"name": "teamspace-owner-gamma-x1", "ownerReferences": []any{map[string]any{"name": "gamma-x1"}}}},
	}
	if got := renamed(in, "x1"); !reflect.DeepEqual(got, want) {
		t.Errorf("renamed:\n%s\nwant:\n%s", mustJSON(got), mustJSON(want))
	}
	if str(field(in[0], "metadata", "name")) != "team-gamma" {
		t.Error("renamed changed its input")
	}
}
