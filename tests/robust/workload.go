package robust

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// ProtectedAnnotation protects a TeamSpace from deletion
// (hack/deploy/guardrails.yaml): deleting one takes lifting it first.
const ProtectedAnnotation = v1alpha1.Group + "/protected"

// Op is one operation of the workload: what was done, to which
// TeamSpace, when, and the API server's answer ("" when it took it). A
// write of a TeamSpace also says when it was sent, the TeamSpace's uid
// and, for spec.pods, the totals it wrote: what the history takes of it
// (Writes).
type Op struct {
	At        time.Time        `json:"at"`
	Sent      time.Time        `json:"sent,omitzero"`
	Kind      string           `json:"kind"`
	TeamSpace string           `json:"teamspace,omitempty"`
	UID       string           `json:"uid,omitempty"`
	Detail    string           `json:"detail,omitempty"`
	Totals    map[string]int64 `json:"totals,omitempty"`
	Err       string           `json:"err,omitempty"`
}

func (o Op) String() string {
	s := fmt.Sprintf("%s %s %s %s", o.At.Format("15:04:05.000"), o.Kind, o.TeamSpace, o.Detail)
	if o.Err != "" {
		s += " -> " + o.Err
	}
	return s
}

// The shape of a workload TeamSpace: 4 cpu and 40 pods in all; with
// extra namespaces e1 and e2 (6 pods, 600m each), with an adopted one
// (entry legacy, 4 pods, 500m). Moves shift 100m between e1 and
// team-<name>, within 500m..700m.
const (
	wlPods       = 40
	wlCPU        = "4"
	wlEntryPods  = 6
	wlEntryMilli = 600
)

// Workload is what the fleet does while faults hit it (issue #67): at a
// steady rate, TeamSpaces created (some with extra namespaces, some
// adopting a namespace made for them, some protected), changed (pods,
// shares moved, owners), deleted (protection lifted first), extra
// namespaces removed with their confirmation, adopted ones released;
// pods created and deleted; children edited and deleted by hand. Every
// operation is logged with its time and answer; errors are expected
// while the API server is down and change nothing but the log.
type Workload struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
	// Prefix names the TeamSpaces (<prefix>-NNNN) and the namespaces made
	// to be adopted (<prefix>-legacy-NNNN).
	Prefix string
	Seed   uint64

	mu   sync.Mutex
	r    *rand.Rand
	next int
	live []string // TeamSpaces created and not deleted by the workload
	ops  []Op
}

// Ops is every operation so far, in order.
func (w *Workload) Ops() []Op {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.ops)
}

// Live is the TeamSpaces the workload created and did not delete.
func (w *Workload) Live() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.live)
}

func (w *Workload) rand() *rand.Rand {
	if w.r == nil {
		w.r = rand.New(rand.NewPCG(w.Seed, w.Seed^0x5bd1e995))
	}
	return w.r
}

func (w *Workload) log(kind, name, detail string, err error) {
	w.add(Op{Kind: kind, TeamSpace: name, Detail: detail}, err)
}

// wrote logs op, a write of TeamSpace ts sent at sent.
func (w *Workload) wrote(op Op, ts *unstructured.Unstructured, sent time.Time, err error) {
	op.Sent, op.TeamSpace, op.UID = sent, ts.GetName(), string(ts.GetUID())
	w.add(op, err)
}

func (w *Workload) add(o Op, err error) {
	o.At = time.Now()
	if err != nil {
		o.Err = err.Error()
	}
	w.mu.Lock()
	w.ops = append(w.ops, o)
	w.mu.Unlock()
}

// Populate creates n TeamSpaces, in parallel, as Create does.
func (w *Workload) Populate(ctx context.Context, n int) error {
	names := make([]string, n)
	for i := range names {
		names[i] = w.newName()
	}
	sem, errs := make(chan struct{}, 16), make(chan error, n)
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- w.create(ctx, name, i)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *Workload) newName() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.next++
	return fmt.Sprintf("%s-%04d", w.Prefix, w.next)
}

// create makes TeamSpace name of the shape i gives: every 4th with extra
// namespaces e1 and e2, every 7th adopting a namespace made for it
// (labelled for it at once: the platform team's confirmation), every 5th
// protected.
func (w *Workload) create(ctx context.Context, name string, i int) error {
	spec := map[string]any{"pods": wlPods, "cpu": wlCPU}
	var entries []any
	if i%4 == 1 {
		for _, e := range []string{"e1", "e2"} {
			entries = append(entries, map[string]any{"name": e, "pods": wlEntryPods, "cpu": fmt.Sprintf("%dm", wlEntryMilli)})
		}
	}
	legacy := ""
	if i%7 == 3 {
		legacy = w.legacyName(name)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: legacy, Labels: map[string]string{v1alpha1.AdoptLabel: name}}}
		if _, err := w.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			w.log("create-legacy", name, legacy, err)
			return err
		}
		entries = append(entries, map[string]any{"name": "legacy", "pods": 4, "cpu": "500m", "adopt": map[string]any{"namespace": legacy}})
	}
	if entries != nil {
		spec["namespaces"] = entries
	}
	meta := map[string]any{"name": name}
	if i%5 == 2 {
		meta["annotations"] = map[string]any{ProtectedAnnotation: "true"}
	}
	ts := &unstructured.Unstructured{Object: map[string]any{"apiVersion": v1alpha1.APIVersion, "kind": v1alpha1.Kind, "metadata": meta, "spec": spec}}
	_, err := w.Dynamic.Resource(teamSpaces).Create(ctx, ts, metav1.CreateOptions{})
	w.log("create", name, fmt.Sprintf("entries=%d legacy=%s protected=%v", len(entries), legacy, i%5 == 2), err)
	if err == nil {
		w.mu.Lock()
		w.live = append(w.live, name)
		w.mu.Unlock()
	}
	return err
}

func (w *Workload) legacyName(name string) string {
	return strings.Replace(name, w.Prefix+"-", w.Prefix+"-legacy-", 1)
}

// steps are the workload's operations and their weights.
var steps = []struct {
	weight int
	do     func(w *Workload, ctx context.Context, r *rand.Rand)
}{
	{2, (*Workload).stepCreate},
	{3, (*Workload).stepPods},
	{3, (*Workload).stepMove},
	{2, (*Workload).stepOwners},
	{2, (*Workload).stepDelete},
	{1, (*Workload).stepRemoveEntry},
	{1, (*Workload).stepRelease},
	{6, (*Workload).stepPod},
	{3, (*Workload).stepHandEdit},
}

// Run does one operation every interval until ctx ends.
func (w *Workload) Run(ctx context.Context, interval time.Duration) {
	total := 0
	for _, s := range steps {
		total += s.weight
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		w.mu.Lock()
		r := w.rand()
		pick := r.IntN(total)
		w.mu.Unlock()
		for _, s := range steps {
			if pick -= s.weight; pick < 0 {
				opCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
				s.do(w, opCtx, r)
				cancel()
				break
			}
		}
	}
}

// pickLive is a random live TeamSpace ("" when none).
func (w *Workload) pickLive(r *rand.Rand) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.live) == 0 {
		return ""
	}
	return w.live[r.IntN(len(w.live))]
}

func (w *Workload) get(ctx context.Context, name string) (*unstructured.Unstructured, error) {
	return w.Dynamic.Resource(teamSpaces).Get(ctx, name, metav1.GetOptions{})
}

// pickTeamSpace reads a random live TeamSpace for operation kind; nil
// when there is none, or the read failed (logged under kind).
func (w *Workload) pickTeamSpace(ctx context.Context, r *rand.Rand, kind string) (*unstructured.Unstructured, string) {
	name := w.pickLive(r)
	if name == "" {
		return nil, ""
	}
	ts, err := w.get(ctx, name)
	if err != nil {
		w.log(kind, name, "", err)
		return nil, name
	}
	return ts, name
}

// update writes ts back and logs it as op (a conflict is an answer like
// any other: logged).
func (w *Workload) update(ctx context.Context, ts *unstructured.Unstructured, op Op) error {
	sent := time.Now()
	_, err := w.Dynamic.Resource(teamSpaces).Update(ctx, ts, metav1.UpdateOptions{})
	w.wrote(op, ts, sent, err)
	return err
}

func (w *Workload) stepCreate(ctx context.Context, r *rand.Rand) {
	w.mu.Lock()
	i := r.IntN(140)
	w.mu.Unlock()
	_ = w.create(ctx, w.newName(), i)
}

func entriesOf(ts *unstructured.Unstructured) []any {
	e, _, _ := unstructured.NestedSlice(ts.Object, "spec", "namespaces")
	return e
}

// stepPods sets spec.pods anywhere from what the entries take plus one
// to 50.
func (w *Workload) stepPods(ctx context.Context, r *rand.Rand) {
	ts, _ := w.pickTeamSpace(ctx, r, "pods")
	if ts == nil {
		return
	}
	floor := int64(1)
	for _, e := range entriesOf(ts) {
		p, _, _ := unstructured.NestedInt64(e.(map[string]any), "pods")
		floor += p
	}
	pods := floor + r.Int64N(51-floor)
	_ = unstructured.SetNestedField(ts.Object, pods, "spec", "pods")
	_ = w.update(ctx, ts, Op{Kind: "pods", Detail: fmt.Sprint(pods), Totals: map[string]int64{"pods": pods}})
}

// stepMove moves 100m between e1 and team-<name> (within 500m..700m).
func (w *Workload) stepMove(ctx context.Context, r *rand.Rand) {
	ts, _ := w.pickTeamSpace(ctx, r, "move")
	if ts == nil {
		return
	}
	entries := entriesOf(ts)
	for _, e := range entries {
		m := e.(map[string]any)
		if m["name"] != "e1" {
			continue
		}
		q, err := resource.ParseQuantity(fmt.Sprint(m["cpu"]))
		if err != nil {
			return
		}
		milli := q.MilliValue() + 100
		if milli > wlEntryMilli+100 || r.IntN(2) == 0 && milli-200 >= wlEntryMilli-100 {
			milli -= 200
		}
		m["cpu"] = fmt.Sprintf("%dm", milli)
		_ = unstructured.SetNestedSlice(ts.Object, entries, "spec", "namespaces")
		_ = w.update(ctx, ts, Op{Kind: "move", Detail: fmt.Sprintf("e1=%dm", milli)})
		return
	}
}

// stepOwners gives the TeamSpace one to three owners.
func (w *Workload) stepOwners(ctx context.Context, r *rand.Rand) {
	ts, _ := w.pickTeamSpace(ctx, r, "owners")
	if ts == nil {
		return
	}
	var owners []any
	var names []string
	for i := range 1 + r.IntN(3) {
		n := fmt.Sprintf("user-%d-%d", r.IntN(20), i)
		owners = append(owners, map[string]any{"kind": "User", "name": n})
		names = append(names, n)
	}
	_ = unstructured.SetNestedSlice(ts.Object, owners, "spec", "owners")
	_ = w.update(ctx, ts, Op{Kind: "owners", Detail: strings.Join(names, ",")})
}

// stepDelete deletes a TeamSpace, lifting its protection first when it
// has one (as guardrails.yaml asks).
func (w *Workload) stepDelete(ctx context.Context, r *rand.Rand) {
	ts, name := w.pickTeamSpace(ctx, r, "delete")
	if ts == nil {
		return
	}
	if ts.GetAnnotations()[ProtectedAnnotation] == "true" {
		patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, ProtectedAnnotation)
		_, err := w.Dynamic.Resource(teamSpaces).Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		w.log("lift-protection", name, "", err)
		if err != nil {
			return
		}
	}
	sent := time.Now()
	err := w.Dynamic.Resource(teamSpaces).Delete(ctx, name, metav1.DeleteOptions{})
	w.wrote(Op{Kind: "delete"}, ts, sent, err)
	if err == nil || apierrors.IsNotFound(err) {
		w.mu.Lock()
		w.live = slices.DeleteFunc(w.live, func(n string) bool { return n == name })
		w.mu.Unlock()
	}
}

// stepRemoveEntry removes extra namespace e2 with its confirmation: the
// entry dropped and the annotation naming it, in one write.
func (w *Workload) stepRemoveEntry(ctx context.Context, r *rand.Rand) {
	w.dropEntry(ctx, r, "remove-entry", "e2", true)
}

// stepRelease releases an adopted namespace: the entry dropped, then the
// platform team's adopt label removed.
func (w *Workload) stepRelease(ctx context.Context, r *rand.Rand) {
	name := w.dropEntry(ctx, r, "release", "legacy", false)
	if name == "" {
		return
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1alpha1.AdoptLabel)
	_, err := w.Kube.CoreV1().Namespaces().Patch(ctx, w.legacyName(name), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	w.log("release-label", name, w.legacyName(name), err)
}

// dropEntry drops entry from a live TeamSpace that has it (tried on a
// few), confirming its removal when confirm; it returns the TeamSpace
// when the write was taken.
func (w *Workload) dropEntry(ctx context.Context, r *rand.Rand, kind, entry string, confirm bool) string {
	for range 5 {
		name := w.pickLive(r)
		if name == "" {
			return ""
		}
		ts, err := w.get(ctx, name)
		if err != nil {
			continue
		}
		entries := entriesOf(ts)
		kept := slices.DeleteFunc(slices.Clone(entries), func(e any) bool { return e.(map[string]any)["name"] == entry })
		if len(kept) == len(entries) {
			continue
		}
		if len(kept) == 0 {
			unstructured.RemoveNestedField(ts.Object, "spec", "namespaces")
		} else {
			_ = unstructured.SetNestedSlice(ts.Object, kept, "spec", "namespaces")
		}
		if confirm {
			a := ts.GetAnnotations()
			if a == nil {
				a = map[string]string{}
			}
			a[v1alpha1.RemoveNamespacesAnnotation] = entry
			ts.SetAnnotations(a)
		}
		if err := w.update(ctx, ts, Op{Kind: kind, Detail: entry}); err != nil {
			return ""
		}
		return name
	}
	return ""
}

// stepPod creates a pod in a namespace of a live TeamSpace, or deletes
// one it made; a pod the quota refuses is an answer like another.
func (w *Workload) stepPod(ctx context.Context, r *rand.Rand) {
	name := w.pickLive(r)
	if name == "" {
		return
	}
	ns := "team-" + name
	if r.IntN(3) == 0 {
		ns += v1alpha1.NamespaceSeparator + "e1"
	}
	pods := w.Kube.CoreV1().Pods(ns)
	if r.IntN(2) == 0 {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "fault-run=pod"})
		if err != nil || len(list.Items) == 0 {
			return
		}
		p := list.Items[r.IntN(len(list.Items))].Name
		w.log("pod-delete", name, ns+"/"+p, pods.Delete(ctx, p, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
		return
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "run-", Labels: map[string]string{"fault-run": "pod"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: new(bool), RunAsNonRoot: ptrTrue(),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}},
	}
	_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
	w.log("pod-create", name, ns, err)
}

func ptrTrue() *bool { t := true; return &t }

// stepHandEdit breaks a child by hand: team-quota deleted or lowered to
// one pod, or the LimitRange deleted, in a namespace of a live TeamSpace.
// (Lowered, not raised: a quota raised by hand would be the hand's sum
// over the totals, not the platform's.)
func (w *Workload) stepHandEdit(ctx context.Context, r *rand.Rand) {
	name := w.pickLive(r)
	if name == "" {
		return
	}
	ns := "team-" + name
	switch r.IntN(3) {
	case 0:
		w.log("hand-delete-quota", name, ns, w.Kube.CoreV1().ResourceQuotas(ns).Delete(ctx, "team-quota", metav1.DeleteOptions{}))
	case 1:
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"hard": map[string]any{"pods": "1"}}})
		_, err := w.Kube.CoreV1().ResourceQuotas(ns).Patch(ctx, "team-quota", types.MergePatchType, patch, metav1.PatchOptions{})
		w.log("hand-lower-quota", name, ns, err)
	default:
		list, err := w.Kube.CoreV1().LimitRanges(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) == 0 {
			w.log("hand-delete-limitrange", name, ns, err)
			return
		}
		lr := list.Items[0].Name
		w.log("hand-delete-limitrange", name, ns+"/"+lr, w.Kube.CoreV1().LimitRanges(ns).Delete(ctx, lr, metav1.DeleteOptions{}))
	}
}
