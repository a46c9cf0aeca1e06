package cluster_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCRDEstablished(t *testing.T) {
	needCluster(t)
	installCRD(t)
	out := mustKubectl(t, "", "get", "crd", crdName,
		"-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
	if out != "True" {
		t.Fatalf("CRD %s Established = %q, want True", crdName, out)
	}
}

// TestPrinterColumns reads the API server's Table for a TeamSpace (what
// `kubectl get ts` prints, server-side printing): the short name works and
// every printer column of crd.yaml shows its field: the quota's usage
// (issue #28; memory with -o wide), not the spec's limits.
func TestPrinterColumns(t *testing.T) {
	needCluster(t)
	installCRD(t)
	name := "columns-" + suffix(t, 6)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 4, "cpu": "0.5"}), "create", "-f", "-")
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
	wantRow := []string{name, "1/4", "100m/500m", "team-" + name, "True"} // status.usage
	if diff := cmp.Diff(wantRow, row[:5]); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if age := row[5]; !strings.HasSuffix(age, "s") && !strings.HasSuffix(age, "m") {
		t.Errorf("AGE = %q, want a duration such as 3s", age)
	}
	if row[6] != "64Mi/1Gi" {
		t.Errorf("MEMORY = %q, want 64Mi/1Gi", row[6])
	}
	if row[7] != "ann" {
		t.Errorf("REQUESTED-BY = %q, want ann", row[7])
	}
}

// TestValidation: the API server itself refuses a bad TeamSpace, naming the
// field, and accepts (and defaults) a good one.
func TestValidation(t *testing.T) {
	needCluster(t)
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
		{"pods 0", teamSpace("v0-"+s, map[string]any{"pods": 0}), []string{"spec.pods", "Invalid value"}},
		{"pods 51", teamSpace("v51-"+s, map[string]any{"pods": 51}), []string{"spec.pods", "Invalid value"}},
		{"pods missing", teamSpace("vmissing-"+s, map[string]any{"cpu": "1"}), []string{"spec.pods", "Required value"}},
		{"spec missing", teamSpace("vnospec-"+s, nil), []string{"spec", "Required value"}},
		{"pods not an integer", teamSpace("vstr-"+s, map[string]any{"pods": "3"}), []string{"spec.pods", "Invalid value"}},
		{"cpu lots", teamSpace("vlots-"+s, map[string]any{"pods": 3, "cpu": "lots"}), []string{"spec.cpu", "Invalid value"}},
		{"cpu -1", teamSpace("vneg-"+s, map[string]any{"pods": 3, "cpu": "-1"}), []string{"spec.cpu", "Invalid value"}},
		{"cpu 0", teamSpace("vzero-"+s, map[string]any{"pods": 3, "cpu": "0"}), []string{"spec.cpu", "Invalid value"}},
		{"owner of unknown kind", teamSpace("vokind-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "Robot", "name": "r"}}}), []string{"spec.owners[0].kind", "Unsupported value"}},
		{"owner with empty name", teamSpace("voname-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "User", "name": ""}}}), []string{"spec.owners[0].name", "Invalid value"}},
		{"ServiceAccount owner without namespace", teamSpace("vosa-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "ServiceAccount", "name": "ci"}}}), []string{"spec.owners[0].namespace", "required for a ServiceAccount"}},
		{"User owner with namespace", teamSpace("vons-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "User", "name": "ann", "namespace": "x"}}}), []string{"spec.owners[0].namespace", "not allowed for a User"}},
		{"ServiceAccount owner with a bad name", teamSpace("vosan-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "ServiceAccount", "name": "A_b", "namespace": "x"}}}), []string{"spec.owners[0].name", "DNS-1123 subdomain"}},
		{"duplicate owners", teamSpace("vodup-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "User", "name": "ann"}, map[string]any{"kind": "User", "name": "ann"}}}), []string{"spec.owners", "same name twice"}},
		{"same name for a User and a Group", teamSpace("vodupk-"+s, map[string]any{"pods": 3, "owners": []any{map[string]any{"kind": "User", "name": "ann"}, map[string]any{"kind": "Group", "name": "ann"}}}), []string{"spec.owners", "same name twice"}},
		{"defaults.cpu above cpu", teamSpace("vdcpu-"+s, map[string]any{"pods": 3, "cpu": "1", "defaults": map[string]any{"cpu": "2"}}), []string{"spec.defaults.cpu", "must not exceed spec.cpu"}},
		{"defaults.cpu 0", teamSpace("vdcpu0-"+s, map[string]any{"pods": 3, "defaults": map[string]any{"cpu": "0"}}), []string{"spec.defaults.cpu", "positive quantity"}},
		{"memory 0", teamSpace("vmem0-"+s, map[string]any{"pods": 3, "memory": "0"}), []string{"spec.memory", "positive quantity"}},
		{"memory lots", teamSpace("vmeml-"+s, map[string]any{"pods": 3, "memory": "lots"}), []string{"spec.memory", "positive quantity"}},
		{"defaults.memory without memory", teamSpace("vdmem-"+s, map[string]any{"pods": 3, "defaults": map[string]any{"memory": "1Gi"}}), []string{"spec.defaults.memory", "needs spec.memory"}},
		{"defaults.memory above memory", teamSpace("vdmemx-"+s, map[string]any{"pods": 3, "memory": "1Gi", "defaults": map[string]any{"memory": "2Gi"}}), []string{"spec.defaults.memory", "must not exceed spec.memory"}},
		{"podSecurity open", teamSpace("vpsa-"+s, map[string]any{"pods": 3, "podSecurity": "open"}), []string{"spec.podSecurity", "Unsupported value"}},
		{"networkIsolation not a boolean", teamSpace("vnet-"+s, map[string]any{"pods": 3, "networkIsolation": "no"}), []string{"spec.networkIsolation", "Invalid value"}},
		{"ephemeralStorage 0", teamSpace("veph0-"+s, map[string]any{"pods": 3, "ephemeralStorage": "0"}), []string{"spec.ephemeralStorage", "positive quantity"}},
		{"objects of an unknown kind", teamSpace("vobjk-"+s, map[string]any{"pods": 3, "objects": map[string]any{"deployments": 3}}), []string{"spec.objects", "takes only configmaps"}},
		{"objects negative", teamSpace("vobjn-"+s, map[string]any{"pods": 3, "objects": map[string]any{"secrets": -1}}), []string{"spec.objects.secrets", "greater than or equal to 0"}},
		{"objects above the most", teamSpace("vobjm-"+s, map[string]any{"pods": 3, "objects": map[string]any{"secrets": 100001}}), []string{"spec.objects.secrets", "less than or equal to 100000"}},
		{"objects configmaps 0", teamSpace("vobjc-"+s, map[string]any{"pods": 3, "objects": map[string]any{"configmaps": 0}}), []string{"spec.objects", "configmaps must be at least 1"}},
		{"objects resourcequotas 1", teamSpace("vobjq-"+s, map[string]any{"pods": 3, "objects": map[string]any{"resourcequotas": 1}}), []string{"spec.objects", "resourcequotas must be at least 2"}},
		{"name a.b", teamSpace("a.b", map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
		{"name Upper", teamSpace("Upper", map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
		{"name of 59 characters", teamSpace(nameOfLength(59), map[string]any{"pods": 3}), []string{"metadata.name", "Invalid value"}},
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

// TestValidationNewFields: every optional field at once is accepted, and a
// seed-style spec gets the defaults podSecurity baseline and
// networkIsolation true.
func TestValidationNewFields(t *testing.T) {
	needCluster(t)
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
	needCluster(t)
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
	if st := mustKubectl(t, "", "get", "teamspace", name, "-o", "jsonpath={.status}"); st != "" {
		t.Errorf("status after a status patch on the main resource = %s, want none", st)
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
