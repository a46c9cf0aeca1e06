package server

import (
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestDashboardSeriesAreTheHooks: every series of the hook's that the
// alert rules, the Grafana dashboard and their promtool tests name
// (teamspace_hook_*, teamspace_archive_*) is one the hook exports, a
// histogram's by its _bucket, _sum and _count; a renamed metric fails here
// rather than leave a panel empty.
func TestDashboardSeriesAreTheHooks(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(reg)
	// One child each, so that every family is gathered.
	m.requests.WithLabelValues("sync", "200").Inc()
	m.duration.WithLabelValues("sync").Observe(0.001)
	m.errors.WithLabelValues("sync", "InvalidJSON").Inc()
	m.archiveWrites.WithLabelValues("stored").Inc()
	m.cacheHits.WithLabelValues("sync").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{}
	for _, f := range families {
		name := f.GetName()
		exported[name] = true
		if f.GetType().String() == "HISTOGRAM" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				exported[name+s] = true
			}
		}
	}
	dir := filepath.Join("..", "..", "hack", "deploy", "prometheus")
	named := 0
	for _, f := range []string{"teamspace-rules.yaml", "teamspace-rules.test.yaml", "teamspace-dashboard.json", "teamspace-dashboard.test.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range regexp.MustCompile(`\bteamspace_(?:hook|archive)_[a-z_]+`).FindAllString(string(b), -1) {
			named++
			if !exported[name] {
				t.Errorf("%s names %s, which the hook does not export (it exports %s)", f, name, strings.Join(slices.Sorted(maps.Keys(exported)), ", "))
			}
		}
	}
	if named == 0 {
		t.Error("no file names a series of the hook's: the check checks nothing")
	}
}
