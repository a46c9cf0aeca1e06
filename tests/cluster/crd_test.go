package cluster_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/labhub/teamspace/tests/golden"
	"sigs.k8s.io/yaml"
)

func TestCRDEstablished(t *testing.T) {
	parallel(t)
	installCRD(t)
	out := mustKubectl(t, "", "get", "crd", crdName,
		"-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
	if out != "True" {
		t.Fatalf("CRD %s Established = %q, want True", crdName, out)
	}
}

// TestPrinterColumns reads the API server's Table for a TeamSpace (what
// `kubectl get ts` prints, server-side printing): the short name works and
// every printer column of crd.yaml shows its field: what the spec allows
// (memory with -o wide), not a status.usage an older hook wrote (kept
// current it cost a sync of the TeamSpace per pod event: issue #54).
func TestPrinterColumns(t *testing.T) {
	parallel(t)
	installCRD(t)
	name := "columns-" + suffix(t, 6)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 4, "cpu": "0.5", "memory": "1Gi"}), "create", "-f", "-")
	deleteOnCleanup(t, "teamspace", name)
	status := fmt.Sprintf(`{"status":{"namespace":"team-%s","usage":{"pods":"1/4","cpu":"100m/500m","memory":"64Mi/1Gi"},"conditions":[{"type":"Ready","status":"True","reason":"Ready","message":"m","lastTransitionTime":"2026-12-02T12:00:00Z"}]}}`, name)
	mustKubectl(t, "", "patch", "teamspace", name, "--subresource=status", "--type=merge", "-p", status)
	// Who asked (the API server stamps it where requested-by.yaml is
	// installed; the admin may set it).
	mustKubectl(t, "", "annotate", "--overwrite", "teamspace", name, requestedByKey+"=ann")

	out := mustKubectl(t, "", "get", "ts", name, "-o", "wide")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("kubectl get ts %s printed %d lines, want a header and a row:\n%s", name, len(lines), out)
	}
	header, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	wantHeader := []string{"NAME", "PODS", "CPU", "NAMESPACE", "READY", "AGE", "MEMORY", "REQUESTED-BY"}
	if diff := cmp.Diff(wantHeader, header); diff != "" {
		t.Errorf("columns (-want +got):\n%s", diff)
	}
	if len(row) != len(wantHeader) {
		t.Fatalf("row %q has %d cells, want %d", lines[1], len(row), len(wantHeader))
	}
	wantRow := []string{name, "4", "0.5", "team-" + name, "True"} // the spec, as written
	if diff := cmp.Diff(wantRow, row[:5]); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if age := row[5]; !strings.HasSuffix(age, "s") && !strings.HasSuffix(age, "m") {
		t.Errorf("AGE = %q, want a duration such as 3s", age)
	}
	if row[6] != "1Gi" {
		t.Errorf("MEMORY = %q, want 1Gi", row[6])
	}
	if row[7] != "ann" {
		t.Errorf("REQUESTED-BY = %q, want ann", row[7])
	}
}

// TestValidation: the API server itself refuses a name that cannot become
// namespace team-<name>, and defaults a good spec (the specs it refuses are
// TestSpecTable's).
func TestValidation(t *testing.T) {
	parallel(t)
	installCRD(t)

	s := suffix(t, 6)
	// A name of n characters unique to this run: "v" + suffix + padding.
	nameOfLength := func(n int) string {
		name := "v" + s
		return name + strings.Repeat("x", n-len(name))
	}

	refused := []struct {
		name string
		obj  string
		// want lists what the error must contain: the field path first.
		want []string
	}{
		{"name a.b", teamSpace("a.b", map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
		{"name Upper", teamSpace("Upper", map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
		{"name of 59 characters", teamSpace(nameOfLength(59), map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
		// team-<name>--<entry> splits one way only (issue #52).
		{"name with --", teamSpace("a--"+s, map[string]any{"pods": 3}), []string{`metadata.name must not contain "--"`}},
		{"name and a namespace entry above 56 characters", teamSpace(nameOfLength(50), map[string]any{"pods": 3, "namespaces": []any{map[string]any{"name": "seven-7", "pods": 1, "cpu": "100m"}}}),
			[]string{"spec.namespaces", "the TeamSpace's name and the entry's together at most 56"}},
	}
	for _, tc := range refused {
		t.Run("refuses "+tc.name, func(t *testing.T) {
			out, err := kubectl(t, tc.obj, "create", "-f", "-")
			if err == nil {
				// Accepted by mistake: do not leave it behind.
				mustKubectl(t, tc.obj, "delete", "-f", "-", "--wait=false")
				t.Fatalf("the API server accepted %s: %s", tc.obj, out)
			}
			msg := err.Error()
			if !strings.Contains(msg, "is invalid") {
				t.Fatalf("want a validation error, got: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q: %v", w, err)
				}
			}
		})
	}

	accepted := []struct {
		name    string
		objName string
		spec    map[string]any
		wantCPU string
	}{
		{"name of 58 characters", nameOfLength(58), map[string]any{"pods": 1}, "1"},
		{"cpu 0.5", "vhalf-" + s, map[string]any{"pods": 50, "cpu": "0.5"}, "0.5"},
		{"cpu 500m", "vmilli-" + s, map[string]any{"pods": 2, "cpu": "500m"}, "500m"},
		{"cpu defaults to 1", "vdefault-" + s, map[string]any{"pods": 3}, "1"},
		{"a namespace entry, name and entry 56 characters", nameOfLength(50), map[string]any{"pods": 3, "namespaces": []any{map[string]any{"name": "six-66", "pods": 1, "cpu": "100m"}}}, "1"},
	}
	for _, tc := range accepted {
		t.Run("accepts "+tc.name, func(t *testing.T) {
			obj := teamSpace(tc.objName, tc.spec)
			deleteOnCleanup(t, "teamspace", tc.objName)
			mustKubectl(t, obj, "create", "-f", "-")
			got, found := getObject(t, "teamspace", tc.objName)
			if !found {
				t.Fatalf("teamspace %s not found after create", tc.objName)
			}
			if cpu := str(field(got, "spec", "cpu")); cpu != tc.wantCPU {
				t.Errorf("spec.cpu = %q, want %q", cpu, tc.wantCPU)
			}
			if pods := str(field(got, "spec", "pods")); pods != fmt.Sprint(tc.spec["pods"]) {
				t.Errorf("spec.pods = %q, want %v", pods, tc.spec["pods"])
			}
		})
	}
}

// TestSpecTable runs the spec table (hook/api/v1alpha1/testdata/specs.json)
// against the API server with crd.yaml: every spec the hook's validation
// accepts (hook/teamspace TestSpecTable runs the same rows there) the API
// server accepts, and every spec it refuses the API server refuses, naming
// the same field. Server-side dry runs: nothing is stored. Field
// validation Warn, the API's own default (kubectl's is Strict): an unknown
// field is pruned, as the hook ignores it.
func TestSpecTable(t *testing.T) {
	parallel(t)
	installCRD(t)
	s := suffix(t, 6)
	for i, c := range golden.SpecCases(t) {
		t.Run(c.Name, func(t *testing.T) {
			var spec map[string]any
			if err := json.Unmarshal(c.Spec, &spec); err != nil {
				t.Fatal(err)
			}
			obj := teamSpace(fmt.Sprintf("vt%d-%s", i, s), spec)
			_, err := kubectl(t, obj, "create", "--dry-run=server", "--validate=warn", "-f", "-")
			switch {
			case c.Field == "" && err != nil:
				t.Errorf("the API server refuses %s: %v; the hook accepts it", c.Spec, err)
			case c.Field != "" && err == nil:
				t.Errorf("the API server accepts %s; the hook refuses it, naming %s", c.Spec, c.Field)
			case c.Field != "" && (!strings.Contains(err.Error(), "is invalid") || !strings.Contains(err.Error(), c.Field+":") && !strings.Contains(err.Error(), c.Field+"[") && !strings.Contains(err.Error(), c.Field+".")):
				t.Errorf("the API server refuses %s with %v, want a validation error naming %s", c.Spec, err, c.Field)
			}
		})
	}
}

// TestValidationNewFields: every optional field at once is accepted, and a
// seed-style spec gets the defaults podSecurity baseline and
// networkIsolation true.
func TestValidationNewFields(t *testing.T) {
	parallel(t)
	installCRD(t)
	s := suffix(t, 6)
	full := "vfull-" + s
	deleteOnCleanup(t, "teamspace", full)
	mustKubectl(t, teamSpace(full, map[string]any{
		"pods": 4, "cpu": "2", "memory": "4Gi",
		"defaults":    map[string]any{"cpu": "2", "memory": "1Gi"},
		"podSecurity": "restricted", "networkIsolation": false,
		"ephemeralStorage": "10Gi", "objects": map[string]any{"secrets": 20, "services.nodeports": 0, "resourcequotas": 2},
		"owners": []any{
			map[string]any{"kind": "User", "name": "ann@example.com"},
			map[string]any{"kind": "Group", "name": "devs"},
			map[string]any{"kind": "ServiceAccount", "name": "ci", "namespace": "tools"},
		},
	}), "create", "-f", "-")
	if got := mustKubectl(t, "", "get", "teamspace", full, "-o", "jsonpath={.spec.podSecurity} {.spec.networkIsolation} {.spec.owners[2].namespace}"); got != "restricted false tools" {
		t.Errorf("stored %q, want \"restricted false tools\"", got)
	}
	plain := "vplain-" + s
	deleteOnCleanup(t, "teamspace", plain)
	mustKubectl(t, teamSpace(plain, map[string]any{"pods": 4}), "create", "-f", "-")
	if got := mustKubectl(t, "", "get", "teamspace", plain, "-o", "jsonpath={.spec.podSecurity} {.spec.networkIsolation}"); got != "baseline true" {
		t.Errorf("defaults %q, want \"baseline true\"", got)
	}
}

// TestGeneration: what bumps metadata.generation, the number the controller
// reports back as status.observedGeneration.
func TestGeneration(t *testing.T) {
	parallel(t)
	installCRD(t)

	name := "gen-" + suffix(t, 8)
	deleteOnCleanup(t, "teamspace", name)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 3}), "create", "-f", "-")

	generation := func() string {
		t.Helper()
		return mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.metadata.generation}")
	}
	if g := generation(); g != "1" {
		t.Fatalf("generation after create = %s, want 1", g)
	}

	// Metadata is not spec: a label leaves the generation alone.
	mustKubectl(t, "", "label", "teamspace", name, "team.labhub.io/test=label")
	if g := generation(); g != "1" {
		t.Errorf("generation after adding a label = %s, want 1", g)
	}

	// With the status subresource, status sent to the main resource is
	// dropped: nothing changes at all.
	out := mustKubectl(t, "", "patch", "teamspace", name, "--type=merge",
		"-p", `{"status":{"namespace":"team-x","observedGeneration":7}}`)
	if !strings.Contains(out, "patched (no change)") {
		t.Errorf("a status patch on the main resource said %q, want \"patched (no change)\"", strings.TrimSpace(out))
	}
	if g := generation(); g != "1" {
		t.Errorf("generation after a status patch on the main resource = %s, want 1", g)
	}
	// The status crd.yaml defaults: observedGeneration 0, no generation.
	if st := mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.status}"); st != `{"observedGeneration":0}` {
		t.Errorf("status after a status patch on the main resource = %s, want the default {\"observedGeneration\":0}", st)
	}

	// A spec change does.
	mustKubectl(t, "", "patch", "teamspace", name, "--type=merge", "-p", `{"spec":{"pods":4}}`)
	if g := generation(); g != "2" {
		t.Errorf("generation after a spec change = %s, want 2", g)
	}

	// A write through the status subresource does not, and is kept.
	mustKubectl(t, "", "patch", "teamspace", name, "--subresource=status", "--type=merge",
		"-p", `{"status":{"observedGeneration":2,"namespace":"team-`+name+`"}}`)
	if g := generation(); g != "2" {
		t.Errorf("generation after a status subresource write = %s, want 2", g)
	}
	if og := mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.status.observedGeneration}"); og != "2" {
		t.Errorf("status.observedGeneration = %q after writing it through the status subresource, want 2", og)
	}
}

// TestExplain: `kubectl explain` on the API server prints, for every field
// of spec and status, the description crd.yaml gives it (from the Go
// types' comments; hook/api/v1alpha1 TestEveryFieldDescribed checks each
// says what the field does, its default and its bounds).
func TestExplain(t *testing.T) {
	parallel(t)
	installCRD(t)
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]struct {
							Properties map[string]struct {
								Description string `json:"description"`
							} `json:"properties"`
						} `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "crd.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &crd); err != nil {
		t.Fatal(err)
	}
	props := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties
	n := 0
	for _, top := range []string{"spec", "status"} {
		for field, p := range props[top].Properties {
			n++
			path := "teamspaces." + top + "." + field
			out := mustKubectl(t, "", "explain", path)
			first := strings.TrimSpace(strings.SplitN(p.Description, "\n", 2)[0])
			if first == "" || !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(first), " ")) {
				t.Errorf("kubectl explain %s does not print %q:\n%s", path, first, out)
			}
		}
	}
	if n < 12 {
		t.Errorf("explained %d fields, want every field of spec and status", n)
	}
}

// TestREADMEExample: the TeamSpace the README shows first (every field,
// spec.namespaces with dev and prod) is one the API server accepts.
func TestREADMEExample(t *testing.T) {
	parallel(t)
	installCRD(t)
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, _ := strings.Cut(string(b), "## A TeamSpace\n\n```yaml\n")
	example, _, found := strings.Cut(after, "```")
	if !found || !strings.Contains(example, "kind: TeamSpace") || !strings.Contains(example, "namespaces:") {
		t.Fatalf("no TeamSpace example with namespaces under the README's \"## A TeamSpace\":\n%s", example)
	}
	if out, err := kubectl(t, example, "create", "--dry-run=server", "-o", "jsonpath={.spec.namespaces[*].name}", "-f", "-"); err != nil || out != "dev prod" {
		t.Errorf("the README's example: %q, %v; want accepted with entries dev and prod", out, err)
	}
}
