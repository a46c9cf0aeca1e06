package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
)

// cost prints where a window's work went, per TeamSpace (per: how many
// the window made or deleted; issue #68): each engine controller's syncs,
// hook calls by hook, the TeamSpaces' status writes, the watch events
// kube-apiserver sent by resource (count and bytes) and, when it keeps an
// audit log (-audit-log), every client's requests by verb and resource,
// the busiest client first. Call it after end.
func (w *window) cost(phase string, per int) {
	f, now, n := w.f, w.last, float64(per)
	perTS := func(m map[string]float64, prefix string) string {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = v / n
		}
		return formatPer(prefix, out)
	}
	syncs := benchutil.SumBy(w.syncs, now.syncs, "name")
	hooks := benchutil.SumBy(w.hook, now.hook, "hook")
	watch := benchutil.SumBy(only(w.watch, "apiserver_watch_events_total{"), only(now.watch, "apiserver_watch_events_total{"), "resource")
	bytes := benchutil.SumBy(only(w.watch, "apiserver_watch_events_sizes_sum{"), only(now.watch, "apiserver_watch_events_sizes_sum{"), "resource")
	var status float64
	isStatus := benchutil.StatusWrites("teamspaces")
	for k, v := range now.api {
		if isStatus(k) {
			status += v - w.apiserve[k]
		}
	}
	var events, sent float64
	for _, v := range watch {
		events += v
	}
	for _, v := range bytes {
		sent += v
	}
	f.result("cost phase=%s count=%d status_writes=%.2f watch_events=%.1f watch_kib=%.1f %s %s %s %s", phase, per, status/n,
		events/n, sent/n/1024, perTS(syncs, "syncs_"), perTS(hooks, "hook_"), perTS(watch, "watch_"), perTS(bytes, "watch_bytes_"))
	if f.auditLog == "" {
		return
	}
	counts, err := benchutil.CountAudit(f.auditLog, w.audit)
	if err != nil {
		f.result("requests phase=%s error=%q", phase, err.Error())
		return
	}
	for _, client := range counts.Clients() {
		f.result("requests phase=%s client=%s %s", phase, client, counts.Format(client, n))
	}
}

// only keeps the series of one metric.
func only(c benchutil.Counters, prefix string) benchutil.Counters {
	out := benchutil.Counters{}
	for k, v := range c {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out
}

// formatPer prints a per-TeamSpace map as k=v pairs in key order, two
// decimals, leaving out what rounds to zero (the watch events of every
// resource nobody touched).
func formatPer(prefix string, m map[string]float64) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if m[k] < 0.005 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s%s=%.2f", prefix, k, m[k]))
	}
	return strings.Join(parts, " ")
}
