package benchutil

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Counters are Prometheus counter values by series (name{labels}).
type Counters map[string]float64

// Getter opens a Prometheus text endpoint.
type Getter func(context.Context) (io.ReadCloser, error)

// Scrape reads the series of one endpoint that keep accepts.
func Scrape(ctx context.Context, get Getter, keep func(string) bool) (Counters, error) {
	body, err := get(ctx)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	out := Counters{}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !keep(line) {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		out[line[:i]] = v
	}
	return out, sc.Err()
}

// HTTPGetter is the Getter of a plain http URL (the engine's and the hook's
// /metrics).
func HTTPGetter(url string) Getter {
	return func(ctx context.Context) (io.ReadCloser, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			resp.Body.Close()
			return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
		}
		return resp.Body, nil
	}
}

// APIServerGetter is kube-apiserver's /metrics through the clients' REST
// client (it needs the admin credentials of the kubeconfig).
func (c *Clients) APIServerGetter() Getter {
	return func(ctx context.Context) (io.ReadCloser, error) {
		return c.Kube.CoreV1().RESTClient().Get().AbsPath("/metrics").Stream(ctx)
	}
}

// ChildResources are the resources the engine writes for a TeamSpace, and
// the TeamSpaces themselves.
var ChildResources = []string{"namespaces", "resourcequotas", "limitranges", "rolebindings", "networkpolicies", "clusterroles", "clusterrolebindings", "teamspaces"}

var mutatingVerbs = []string{"POST", "PUT", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}

// APIServerWrites keeps kube-apiserver's mutating requests on ChildResources.
func APIServerWrites(line string) bool {
	if !strings.HasPrefix(line, "apiserver_request_total{") {
		return false
	}
	if !containsAny(line, mutatingVerbs, `verb="%s"`) {
		return false
	}
	return containsAny(line, ChildResources, `resource="%s"`)
}

// StatusWrites keeps kube-apiserver's writes (PUT, PATCH, APPLY) of one
// resource's status subresource.
func StatusWrites(resource string) func(line string) bool {
	return func(line string) bool {
		return strings.HasPrefix(line, "apiserver_request_total{") &&
			strings.Contains(line, `resource="`+resource+`"`) && strings.Contains(line, `subresource="status"`) &&
			containsAny(line, []string{"PUT", "PATCH", "APPLY"}, `verb="%s"`)
	}
}

func containsAny(line string, values []string, format string) bool {
	for _, v := range values {
		if strings.Contains(line, fmt.Sprintf(format, v)) {
			return true
		}
	}
	return false
}

// Diff is after - before by series: the total and one line per series that
// changed.
func Diff(before, after Counters) (total float64, lines []string) {
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			total += d
			lines = append(lines, fmt.Sprintf("    %s +%g", k, d))
		}
	}
	sort.Strings(lines)
	return total, lines
}

// SumBy sums after - before over the series, grouped by the value of one
// label (e.g. "method" or "verb").
func SumBy(before, after Counters, label string) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		d := v - before[k]
		if d == 0 {
			continue
		}
		out[labelValue(k, label)] += d
	}
	return out
}

func labelValue(series, label string) string {
	i := strings.Index(series, label+`="`)
	if i < 0 {
		return "?"
	}
	rest := series[i+len(label)+2:]
	if j := strings.IndexByte(rest, '"'); j >= 0 {
		return rest[:j]
	}
	return "?"
}

// FormatBy prints a SumBy map as k=v pairs in key order, with a prefix.
func FormatBy(prefix string, m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s%s=%g", prefix, strings.ToLower(k), m[k]))
	}
	return strings.Join(parts, " ")
}

// IsCompositeQueue keeps the workqueue series (client-go's and
// controller-runtime's priority queue export the same names) of the
// engine's CompositeController queues: how long a key waited before a
// worker took it, and how long the worker took.
func IsCompositeQueue(line string) bool {
	return strings.HasPrefix(line, "workqueue_") && strings.Contains(line, `name="CompositeController-`)
}

// QueueStat is one workqueue histogram over a window: how many observations,
// their mean, and the share of them above one second.
type QueueStat struct {
	N, Mean, Over1s float64
}

// Queue summarises after - before of a workqueue histogram (metric is
// "workqueue_queue_duration_seconds" or "workqueue_work_duration_seconds")
// summed over every queue IsCompositeQueue kept. The buckets are powers of
// ten, so a mean and a share above 1 s say more than a quantile would.
func Queue(before, after Counters, metric string) QueueStat {
	var n, sum, le1 float64
	for k, v := range after {
		d := v - before[k]
		switch {
		case strings.HasPrefix(k, metric+"_count{"):
			n += d
		case strings.HasPrefix(k, metric+"_sum{"):
			sum += d
		case strings.HasPrefix(k, metric+"_bucket{") && nearOne(labelValue(k, "le")):
			le1 += d
		}
	}
	if n == 0 {
		return QueueStat{}
	}
	return QueueStat{N: n, Mean: sum / n, Over1s: (n - le1) / n}
}

// nearOne says whether a bucket's bound is the one at 1 s: the buckets are
// made by repeated multiplication and print as e.g. 0.9999999999999999.
func nearOne(le string) bool {
	f, err := strconv.ParseFloat(le, 64)
	return err == nil && f > 0.5 && f < 2
}

// Depth sums a gauge (workqueue_depth) over every queue kept.
func Depth(c Counters) float64 {
	var d float64
	for k, v := range c {
		if strings.HasPrefix(k, "workqueue_depth{") {
			d += v
		}
	}
	return d
}

// FormatQueue prints a window's queue figures as k=v pairs.
func FormatQueue(before, after Counters) string {
	wait, work := Queue(before, after, "workqueue_queue_duration_seconds"), Queue(before, after, "workqueue_work_duration_seconds")
	return fmt.Sprintf("queue_gets=%g queue_wait_mean_ms=%.1f queue_wait_over_1s=%.3f work_mean_ms=%.1f queue_depth_end=%g",
		wait.N, wait.Mean*1000, wait.Over1s, work.Mean*1000, Depth(after))
}
