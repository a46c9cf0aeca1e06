package cluster_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/labhub/teamspace/tests/controlplane"
	"github.com/labhub/teamspace/tests/testenv"
)

// TestKubeStateMetricsConfig runs a real kube-state-metrics (built from its
// module: hack/lib.sh ensure_kube_state_metrics) with
// hack/deploy/prometheus/kube-state-metrics.yaml against the test control
// plane, and reads what it exports for a TeamSpace whose status is what the
// hook answers on its way: every series the alert rules read
// (teamspace-rules.yaml, and the inputs of its promtool tests) is there,
// with the labels they match on and the values of the spec and status.
func TestKubeStateMetricsConfig(t *testing.T) {
	parallel(t)
	cp := controlplane.Need(t)
	bin := os.Getenv("KUBE_STATE_METRICS_BIN")
	if bin == "" {
		if os.Getenv("TEAMSPACE_REQUIRE_MONITORING") != "" {
			t.Fatal("KUBE_STATE_METRICS_BIN is not set (hack/test.sh sets it)")
		}
		t.Skip("KUBE_STATE_METRICS_BIN is not set: run hack/test.sh, or build it (hack/lib.sh ensure_kube_state_metrics)")
	}
	installCRD(t)
	name := "ksm-" + suffix(t, 6)
	mustKubectl(t, teamSpace(name, map[string]any{"pods": 4, "cpu": "500m", "memory": "1Gi"}), "create", "-f", "-")
	deleteOnCleanup(t, "teamspace", name)
	mustKubectl(t, "", "annotate", "--overwrite", "teamspace", name, requestedByKey+"=ann")
	msg := "waiting for ResourceQuota team-" + name + "/team-quota to be created"
	status := `{"status":{"observedGeneration":1,"namespace":"team-` + name + `","conditions":[` +
		`{"type":"Ready","status":"False","reason":"QuotaPending","message":"` + msg + `","lastTransitionTime":"2026-12-05T10:00:00Z"},` +
		`{"type":"Reconciling","status":"True","reason":"QuotaPending","message":"` + msg + `","lastTransitionTime":"2026-12-05T10:00:00Z"}]}}`
	mustKubectl(t, "", "patch", "teamspace", name, "--subresource=status", "--type=merge", "-p", status)
	// A quota of a namespace (as the engine makes team-quota), counted by
	// the quota controller: kube-state-metrics' own kube_resourcequota.
	mustKubectl(t, "", "create", "namespace", name)
	deleteOnCleanup(t, "namespace", name)
	mustKubectl(t, `{"apiVersion":"v1","kind":"ResourceQuota","metadata":{"name":"team-quota","namespace":"`+name+`"},"spec":{"hard":{"pods":"4","requests.cpu":"2"}}}`, "create", "-f", "-")

	config := filepath.Join(repoRoot(t), "hack", "deploy", "prometheus", "kube-state-metrics.yaml")
	addr, telemetry := testenv.FreeAddr(t), testenv.FreeAddr(t)
	host, port, _ := net.SplitHostPort(addr)
	_, tport, _ := net.SplitHostPort(telemetry)
	ctx, cancel := context.WithCancel(context.Background())
	var log strings.Builder
	cmd := exec.CommandContext(ctx, bin, "--kubeconfig="+cp.Kubeconfig,
		"--resources=resourcequotas", "--custom-resource-state-config-file="+config,
		"--host="+host, "--port="+port, "--telemetry-host="+host, "--telemetry-port="+tport)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel() // kube-state-metrics stops with the test
		_ = cmd.Wait()
	}()

	var metrics string
	if !eventually(60*time.Second, 500*time.Millisecond, func() bool {
		metrics = scrape("http://" + addr + "/metrics")
		return strings.Contains(metrics, `teamspace_status_condition{`) && strings.Contains(metrics, `name="`+name+`"`) &&
			strings.Contains(metrics, `namespace="`+name+`"`) && strings.Contains(metrics, `type="used"`)
	}) {
		t.Fatalf("kube-state-metrics exports nothing for TeamSpace %s after 60s; it exports:\n%s\nits log:\n%s", name, metrics, log.String())
	}
	series := parseSeries(metrics, "name", name)
	want := map[string]float64{
		`teamspace_status_condition{name,reason=QuotaPending,type=Ready}`:       0,
		`teamspace_status_condition{name,reason=QuotaPending,type=Reconciling}`: 1,
		`teamspace_generation{name}`:                                            1,
		`teamspace_observed_generation{name}`:                                   1,
		`teamspace_deletion_timestamp{name}`:                                    0,
		`teamspace_spec_pods{name}`:                                             4,
		`teamspace_spec_cpu_cores{name}`:                                        0.5,
		`teamspace_spec_memory_bytes{name}`:                                     1 << 30,
		`teamspace_info{name,namespace=team-` + name + `,requested_by=ann}`:     1,
	}
	for k, v := range want {
		got, ok := series[k]
		if !ok {
			t.Errorf("kube-state-metrics exports no %s; it exports for %s:\n%s", k, name, strings.Join(keys(series), "\n"))
		} else if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	// team-quota as kube_resourcequota, with the labels the rules and the
	// dashboard match on.
	quota := parseSeries(metrics, "namespace", name)
	for k, v := range map[string]float64{
		`kube_resourcequota{namespace,resource=pods,resourcequota=team-quota,type=hard}`:         4,
		`kube_resourcequota{namespace,resource=pods,resourcequota=team-quota,type=used}`:         0,
		`kube_resourcequota{namespace,resource=requests.cpu,resourcequota=team-quota,type=hard}`: 2,
	} {
		if got, ok := quota[k]; !ok {
			t.Errorf("kube-state-metrics exports no %s for namespace %s; it exports:\n%s", k, name, strings.Join(keys(quota), "\n"))
		} else if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	// Every teamspace_* and kube_* series the rules, the dashboard and
	// their tests name is one kube-state-metrics exports with the
	// configuration; the hook's own (teamspace_hook_*, teamspace_archive_*)
	// are checked against the hook by hook/server's
	// TestDashboardSeriesAreTheHooks.
	exported := map[string]bool{}
	for _, s := range []map[string]float64{series, quota} {
		for k := range s {
			exported[k[:strings.IndexByte(k, '{')]] = true
		}
	}
	for _, f := range []string{"teamspace-rules.yaml", "teamspace-rules.test.yaml", "teamspace-dashboard.json", "teamspace-dashboard.test.yaml"} {
		b, err := os.ReadFile(filepath.Join(repoRoot(t), "hack", "deploy", "prometheus", f))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\b(?:teamspace|kube)_[a-z_]+`).FindAllString(string(b), -1) {
			if strings.HasPrefix(m, "teamspace_hook_") || strings.HasPrefix(m, "teamspace_archive_") {
				continue
			}
			if !exported[m] {
				t.Errorf("%s names %s, which kube-state-metrics does not export with kube-state-metrics.yaml", f, m)
			}
		}
	}
}

// scrape returns the body at url, "" on any error.
func scrape(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// parseSeries reads the text exposition format: the series whose label
// key is value (a TeamSpace's name, a namespace), keyed metric{labels} with
// the labels sorted, kube-state-metrics' customresource_* left out and key
// written without its value.
func parseSeries(text, key, value string) map[string]float64 {
	line := regexp.MustCompile(`^([a-z_]+)\{(.*)\} (\S+)$`)
	label := regexp.MustCompile(`([a-z_]+)="((?:[^"\\]|\\.)*)"`)
	out := map[string]float64{}
	for _, l := range strings.Split(text, "\n") {
		m := line.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		var labels []string
		mine := false
		for _, lm := range label.FindAllStringSubmatch(m[2], -1) {
			switch {
			case strings.HasPrefix(lm[1], "customresource_"):
			case lm[1] == key:
				mine = lm[2] == value
				labels = append(labels, key)
			default:
				labels = append(labels, lm[1]+"="+lm[2])
			}
		}
		if !mine {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			continue
		}
		slices.Sort(labels)
		out[m[1]+"{"+strings.Join(labels, ",")+"}"] = v
	}
	return out
}

func keys(m map[string]float64) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
