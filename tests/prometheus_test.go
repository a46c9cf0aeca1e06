package tests_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/labhub/teamspace/tests/golden"
)

// The alert rules: one plain rules file and the same groups as a
// PrometheusRule.
var (
	promDir        = filepath.Join("..", "hack", "deploy", "prometheus")
	rulesFile      = filepath.Join(promDir, "teamspace-rules.yaml")
	prometheusRule = filepath.Join(promDir, "prometheusrule.yaml")
)

// promtool is PROMTOOL_BIN (hack/test.sh builds it); without it the test
// skips, unless TEAMSPACE_REQUIRE_MONITORING=1.
func promtool(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("PROMTOOL_BIN")
	if bin == "" {
		if os.Getenv("TEAMSPACE_REQUIRE_MONITORING") != "" {
			t.Fatal("PROMTOOL_BIN is not set (hack/test.sh sets it)")
		}
		t.Skip("PROMTOOL_BIN is not set: run hack/test.sh, or build promtool (hack/lib.sh ensure_promtool)")
	}
	return bin
}

// TestAlertRules: promtool accepts the rules file and its unit tests pass
// (teamspace-rules.test.yaml: every alert firing on the series
// kube-state-metrics.yaml exports, and not before its time); a rules file
// that does not parse fails here.
func TestAlertRules(t *testing.T) {
	bin := promtool(t)
	for _, args := range [][]string{{"check", "rules", "teamspace-rules.yaml"}, {"test", "rules", "teamspace-rules.test.yaml"}} {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Dir = promDir // the test file names the rules file beside it
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("promtool %v: %v\n%s", args, err, out)
		}
	}
}

// TestAlertRulesRefuseBadInput: promtool, as the suite runs it, fails on a
// rules file that does not parse (so TestAlertRules can fail).
func TestAlertRulesRefuseBadInput(t *testing.T) {
	bin := promtool(t)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("groups:\n  - name: x\n    rules:\n      - alert: Broken\n        expr: up{job=\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "check", "rules", bad).CombinedOutput(); err == nil {
		t.Errorf("promtool check rules accepted a rule that does not parse:\n%s", out)
	}
}

// TestPrometheusRuleIsTheRulesFile: prometheusrule.yaml (for the Prometheus
// Operator) holds exactly the groups of teamspace-rules.yaml; -update
// writes it from the rules file.
func TestPrometheusRuleIsTheRulesFile(t *testing.T) {
	var rules struct {
		Groups []any `json:"groups"`
	}
	if err := yaml.Unmarshal(mustReadFile(t, rulesFile), &rules); err != nil {
		t.Fatal(err)
	}
	if len(rules.Groups) == 0 {
		t.Fatal("teamspace-rules.yaml has no groups")
	}
	if *golden.Update {
		body, err := yaml.Marshal(map[string]any{
			"apiVersion": "monitoring.coreos.com/v1",
			"kind":       "PrometheusRule",
			"metadata": map[string]any{
				"name":      "teamspace",
				"namespace": "teamspace-system",
				"labels":    map[string]any{"app.kubernetes.io/part-of": "teamspace"},
			},
			"spec": map[string]any{"groups": rules.Groups},
		})
		if err != nil {
			t.Fatal(err)
		}
		header := "# The alert rules of teamspace-rules.yaml as a PrometheusRule (Prometheus\n" +
			"# Operator), written from it: go test ./tests -run TestPrometheusRuleIsTheRulesFile -update\n"
		if err := os.WriteFile(prometheusRule, append([]byte(header), body...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var pr struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(mustReadFile(t, prometheusRule), &pr); err != nil {
		t.Fatal(err)
	}
	if pr.Kind != "PrometheusRule" || !reflect.DeepEqual(pr.Spec.Groups, rules.Groups) {
		t.Errorf("prometheusrule.yaml is not teamspace-rules.yaml's groups: go test ./tests -run TestPrometheusRuleIsTheRulesFile -update")
	}
}
