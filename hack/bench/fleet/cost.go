package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/labhub/teamspace/hack/bench/internal/benchutil"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	teamspacehook "github.com/labhub/teamspace/hook/teamspace"
)

// cost prints where a window's work went, per TeamSpace (per: how many
// the window made or deleted; issue #68): each engine controller's syncs,
// hook calls by hook, the TeamSpaces' status writes, the watch events
// kube-apiserver sent by resource (count and bytes) and, when it keeps an
// audit log (-audit-log), every client's requests by verb and resource,
// the busiest client first. Call it after end, with the sums it returned.
func (w *window) cost(phase string, per int, s sums) {
	f, first, last, n := w.f, w.first, w.last, float64(per)
	perTS := func(m map[string]float64, prefix string) string {
		out := map[string]float64{}
		for k, v := range m {
			out[k] = v / n
		}
		return formatPer(prefix, out)
	}
	syncs := benchutil.SumBy(first.syncs, last.syncs, "name")
	hooks := benchutil.SumBy(first.hook, last.hook, "hook")
	watch := benchutil.SumBy(only(first.watch, "apiserver_watch_events_total{"), only(last.watch, "apiserver_watch_events_total{"), "resource")
	bytes := benchutil.SumBy(only(first.watch, "apiserver_watch_events_sizes_sum{"), only(last.watch, "apiserver_watch_events_sizes_sum{"), "resource")
	var events, sent float64
	for _, v := range watch {
		events += v
	}
	for _, v := range bytes {
		sent += v
	}
	f.result("cost phase=%s count=%d status_writes=%.2f watch_events=%.1f watch_kib=%.1f %s %s %s %s", phase, per, s.statusWrites/n,
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

// stored prints the bytes of one TeamSpace's objects (the TeamSpace and
// every child of team-<name>; a floor namespace's objects with teamspace
// empty) in the encoding kube-apiserver stores them in: protobuf for the
// built-in kinds, JSON for a TeamSpace. What the engine adds beside the
// hook's fields (its last-applied copy, its labels and ownerReferences,
// managedFields) is in these bytes; the floor's objects carry none of it.
func (f *fleet) stored(ctx context.Context, phase, namespace, teamspace string) {
	ownerName := teamspace
	if ownerName == "" {
		ownerName = namespace // floorRest names its owners' objects after the namespace
	}
	ns := "/api/v1/namespaces/" + namespace
	rbac := "/apis/rbac.authorization.k8s.io/v1/"
	paths := []struct{ kind, path string }{
		{"namespace", ns},
		{"limitrange", ns + "/limitranges/" + teamspacehook.LimitRangeName},
		{"quota", ns + "/resourcequotas/" + teamspacehook.QuotaName},
		{"objects_quota", ns + "/resourcequotas/" + teamspacehook.ObjectsQuotaName},
		{"rolebinding", rbac + "namespaces/" + namespace + "/rolebindings/" + teamspacehook.RoleBindingName},
		{"networkpolicy", "/apis/networking.k8s.io/v1/namespaces/" + namespace + "/networkpolicies/" + teamspacehook.NetworkPolicyName},
		{"clusterrole", rbac + "clusterroles/" + teamspacehook.OwnerAccessName(ownerName)},
		{"clusterrolebinding", rbac + "clusterrolebindings/" + teamspacehook.OwnerAccessName(ownerName)},
	}
	if teamspace != "" {
		paths = append(paths, struct{ kind, path string }{"teamspace", "/apis/" + v1alpha1.APIVersion + "/teamspaces/" + teamspace})
	}
	var parts []string
	total := 0
	for _, p := range paths {
		b, err := f.c.Kube.CoreV1().RESTClient().Get().AbsPath(p.path).
			SetHeader("Accept", "application/vnd.kubernetes.protobuf, application/json").DoRaw(ctx)
		if err != nil {
			continue // not made for this one (e.g. no objects quota)
		}
		total += len(b)
		parts = append(parts, fmt.Sprintf("stored_%s=%d", p.kind, len(b)))
	}
	f.result("stored phase=%s namespace=%s stored_total=%d %s", phase, namespace, total, strings.Join(parts, " "))
}
