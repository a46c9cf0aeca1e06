package benchutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestCheckOwnCluster(t *testing.T) {
	own := t.TempDir()
	if err := os.WriteFile(filepath.Join(own, ClusterMarker), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kubeconfig string
		wantErr    bool
	}{
		{"next to the marker", filepath.Join(own, "admin.kubeconfig"), false},
		{"anywhere else", filepath.Join(t.TempDir(), "config"), true},
		{"home kubeconfig", "/root/.kube/config", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkOwnCluster(tt.kubeconfig)
			if (err != nil) != tt.wantErr {
				t.Fatalf("checkOwnCluster(%s) = %v, want error %v", tt.kubeconfig, err, tt.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), "-foreign-cluster") {
				t.Errorf("error %q does not name the flag that overrides it", err)
			}
		})
	}
	if _, err := NewClients(filepath.Join(t.TempDir(), "config"), false); err == nil {
		t.Error("NewClients accepted a foreign kubeconfig without the flag")
	}
}

func TestSumBy(t *testing.T) {
	before := Counters{
		`rest_client_requests_total{code="200",host="h",method="GET"}`:  10,
		`rest_client_requests_total{code="201",host="h",method="POST"}`: 5,
	}
	after := Counters{
		`rest_client_requests_total{code="200",host="h",method="GET"}`:  25,
		`rest_client_requests_total{code="201",host="h",method="POST"}`: 5,
		`rest_client_requests_total{code="409",host="h",method="PUT"}`:  2,
		`rest_client_requests_total{code="200",host="h",method="PUT"}`:  3,
	}
	got := SumBy(before, after, "method")
	want := map[string]float64{"GET": 15, "PUT": 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SumBy (-want +got):\n%s", diff)
	}
	if got, want := FormatBy("engine_", got), "engine_get=15 engine_put=5"; got != want {
		t.Errorf("FormatBy = %q, want %q", got, want)
	}
}

func TestAPIServerWrites(t *testing.T) {
	tests := []struct {
		line string
		want bool
	}{
		{`apiserver_request_total{code="200",resource="resourcequotas",verb="PUT"} 3`, true},
		{`apiserver_request_total{code="201",resource="namespaces",verb="POST"} 1`, true},
		{`apiserver_request_total{code="200",resource="resourcequotas",verb="GET"} 9`, false},
		{`apiserver_request_total{code="201",resource="pods",verb="POST"} 9`, false},
		{`rest_client_requests_total{method="PUT"} 1`, false},
	}
	for _, tt := range tests {
		if got := APIServerWrites(tt.line); got != tt.want {
			t.Errorf("APIServerWrites(%s) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

func TestProcOfThisProcess(t *testing.T) {
	p := Proc{Name: "self", PID: os.Getpid()}
	deadline := time.Now().Add(300 * time.Millisecond)
	for i := 0; time.Now().Before(deadline); i++ {
		_ = strings.Repeat("x", i%1000) // burn CPU so that the counter moves
	}
	cpu, err := p.CPUSeconds()
	if err != nil || cpu <= 0 {
		t.Errorf("CPUSeconds = %v, %v; want > 0 after 300 busy milliseconds", cpu, err)
	}
	rss, hwm, err := p.Memory()
	if err != nil || rss <= 0 || hwm < rss {
		t.Errorf("Memory = %v, %v, %v; want 0 < rss <= hwm", rss, hwm, err)
	}
}

func TestSummarise(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 200; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	s := Summarise(ds)
	if s.P50 != 100*time.Millisecond || s.P99 != 198*time.Millisecond || s.Max != 200*time.Millisecond {
		t.Errorf("Summarise(1..200 ms) = p50 %s p99 %s max %s, want 100ms 198ms 200ms", s.P50, s.P99, s.Max)
	}
}

func TestQueue(t *testing.T) {
	const q = `name="CompositeController-teamspace-controller"`
	before := Counters{
		`workqueue_queue_duration_seconds_bucket{le="0.1",` + q + `}`:                10,
		`workqueue_queue_duration_seconds_bucket{le="0.9999999999999999",` + q + `}`: 10,
		`workqueue_queue_duration_seconds_bucket{le="+Inf",` + q + `}`:               10,
		`workqueue_queue_duration_seconds_sum{` + q + `}`:                            1,
		`workqueue_queue_duration_seconds_count{` + q + `}`:                          10,
	}
	after := Counters{
		`workqueue_queue_duration_seconds_bucket{le="0.1",` + q + `}`:                16,
		`workqueue_queue_duration_seconds_bucket{le="0.9999999999999999",` + q + `}`: 18,
		`workqueue_queue_duration_seconds_bucket{le="+Inf",` + q + `}`:               20,
		`workqueue_queue_duration_seconds_sum{` + q + `}`:                            6,
		`workqueue_queue_duration_seconds_count{` + q + `}`:                          20,
		`workqueue_depth{` + q + `}`:                                                 7,
	}
	got := Queue(before, after, "workqueue_queue_duration_seconds")
	want := QueueStat{N: 10, Mean: 0.5, Over1s: 0.2}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Queue (-want +got):\n%s", diff)
	}
	if got := Queue(before, after, "workqueue_work_duration_seconds"); got != (QueueStat{}) {
		t.Errorf("Queue of a metric with no series = %+v, want zero", got)
	}
	if got := Depth(after); got != 7 {
		t.Errorf("Depth = %g, want 7", got)
	}
	for line, want := range map[string]bool{
		`workqueue_depth{` + q + `} 3`:                         true,
		`workqueue_depth{name="DecoratorController-x"} 3`:      false,
		`rest_client_requests_total{method="GET"} 3`:           false,
		`workqueue_adds_total{name="CompositeController-a"} 1`: true,
	} {
		if got := IsCompositeQueue(line); got != want {
			t.Errorf("IsCompositeQueue(%s) = %v, want %v", line, got, want)
		}
	}
}
