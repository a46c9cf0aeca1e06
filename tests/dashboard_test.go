package tests_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// The Grafana dashboard and the promtool tests of its queries.
var (
	dashboardFile     = filepath.Join(promDir, "teamspace-dashboard.json")
	dashboardTestFile = filepath.Join(promDir, "teamspace-dashboard.test.yaml")
)

// dashboardVariables are the values of Grafana's variables the queries are
// tested with, one set per run of the queries: every query of the
// dashboard is in the promtool tests once per set.
var dashboardVariables = []map[string]string{
	{"teamspace": "alpha", "__rate_interval": "5m"},
	{"teamspace": "beta", "__rate_interval": "5m"},
}

// grafanaDashboard is the part of Grafana's JSON model the test reads.
type grafanaDashboard struct {
	Title      string         `json:"title"`
	UID        string         `json:"uid"`
	Panels     []grafanaPanel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// labelValues is Grafana's label_values(metric, label) of a variable; it
// is tested as the PromQL that lists the same values.
var labelValues = regexp.MustCompile(`^label_values\(\s*([^,]+?)\s*,\s*([a-z_]+)\s*\)$`)

// dashboardQueries returns every PromQL query of the dashboard, its
// variables' included, by where it is, and fails on a panel that cannot
// show anything.
func dashboardQueries(t *testing.T) map[string]string {
	t.Helper()
	var d grafanaDashboard
	if err := json.Unmarshal(mustReadFile(t, dashboardFile), &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.Title == "" || d.UID == "" {
		t.Errorf("%s: no title or uid (Grafana provisioning keys dashboards by uid)", dashboardFile)
	}
	queries := map[string]string{} // query → where
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query: %v", v.Name, err)
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Fatalf("variable %s: query %q is not label_values(metric, label), which this test knows how to check", v.Name, q.Query)
		}
		queries["group by ("+m[2]+") ("+m[1]+")"] = "variable " + v.Name
	}
	var walk func([]grafanaPanel)
	ids := map[int]bool{}
	walk = func(panels []grafanaPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel id %d twice", p.ID)
			}
			ids[p.ID] = true
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: datasource is not the dashboard's Prometheus variable ${datasource}", p.Title)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q has no query", p.Title)
			}
			for _, target := range p.Targets {
				if strings.TrimSpace(target.Expr) == "" {
					t.Errorf("panel %q: a query is empty", p.Title)
				}
				queries[target.Expr] = "panel " + p.Title
			}
		}
	}
	walk(d.Panels)
	return queries
}

// grafanaVariable is a use of a variable in a query: $name or ${name}.
var grafanaVariable = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?`)

// substitute sets Grafana's variables in query as Grafana does before
// sending it, and fails on one the test has no value for.
func substitute(t *testing.T, query string, values map[string]string) string {
	t.Helper()
	return grafanaVariable.ReplaceAllStringFunc(query, func(use string) string {
		name := grafanaVariable.FindStringSubmatch(use)[1]
		v, ok := values[name]
		if !ok {
			t.Errorf("query %q uses $%s, for which dashboardVariables has no value", query, name)
		}
		return v
	})
}

// TestDashboard: every query of teamspace-dashboard.json (panels and
// variables), with each set of dashboardVariables, is one of the promtool
// tests of teamspace-dashboard.test.yaml, and with at least one set it
// gives a sample (so a query naming a series nobody exports, or matching
// labels it does not have, fails); the file holds no query the dashboard
// has not; and promtool passes them all against the series
// kube-state-metrics and the hook export (TestKubeStateMetricsConfig and
// hook/server's TestDashboardSeriesAreTheHooks check those names).
func TestDashboard(t *testing.T) {
	queries := dashboardQueries(t)
	var file struct {
		Tests []struct {
			Name  string `json:"name"`
			Exprs []struct {
				Expr       string `json:"expr"`
				ExpSamples []any  `json:"exp_samples"`
			} `json:"promql_expr_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(mustReadFile(t, dashboardTestFile), &file); err != nil {
		t.Fatalf("%s: %v", dashboardTestFile, err)
	}
	tested := map[string]int{} // expr → samples expected
	for _, group := range file.Tests {
		for _, e := range group.Exprs {
			tested[e.Expr] += len(e.ExpSamples)
		}
	}
	wanted := map[string]bool{}
	for query, where := range queries {
		samples := 0
		for _, values := range dashboardVariables {
			q := substitute(t, query, values)
			wanted[q] = true
			n, ok := tested[q]
			if !ok {
				t.Errorf("%s: query %q is not tested in %s", where, q, filepath.Base(dashboardTestFile))
			}
			samples += n
		}
		if samples == 0 {
			t.Errorf("%s: query %q gives nothing in any test: a test that expects nothing cannot tell a series we do not export", where, query)
		}
	}
	var stale []string
	for q := range tested {
		if !wanted[q] {
			stale = append(stale, q)
		}
	}
	slices.Sort(stale)
	for _, q := range stale {
		t.Errorf("%s tests %q, which the dashboard does not ask", filepath.Base(dashboardTestFile), q)
	}

	bin := promtool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "test", "rules", filepath.Base(dashboardTestFile))
	cmd.Dir = promDir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool test rules %s: %v\n%s", filepath.Base(dashboardTestFile), err, out)
	}
}
