package robust

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// StoredRecord is one record the archive holds: its name, its uid and when
// it was written.
type StoredRecord struct {
	Key string
	UID string
	At  time.Time
}

// Archive lists what an archive holds (a directory: DirArchive; a bucket:
// the caller's).
type Archive func(ctx context.Context) ([]StoredRecord, error)

// DirArchive lists the records of an archive directory (hook/archive):
// each file's uid and modification time.
func DirArchive(dir string) Archive {
	return func(context.Context) ([]StoredRecord, error) {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, err
		}
		var out []StoredRecord
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // being written, or gone: the next listing has it
			}
			var rec struct {
				UID string `json:"uid"`
			}
			st, err := os.Stat(f)
			if err != nil || json.Unmarshal(b, &rec) != nil || rec.UID == "" {
				continue
			}
			out = append(out, StoredRecord{Key: filepath.Base(f), UID: rec.UID, At: st.ModTime()})
		}
		return out, nil
	}
}

var teamSpaces = schema.GroupVersionResource{Group: v1alpha1.Group, Version: v1alpha1.Version, Resource: "teamspaces"}

// Recorder appends to its History what it observes of a cluster through
// watches (TeamSpaces, namespaces, quotas), the archive's listing and a
// quota sample every Interval.
//
// Times: a deletion is dated by the object's deletionTimestamp, which the
// API server keeps to the second; NamespaceDeleting is dated at the end of
// that second (the latest it can have begun), so that a record stored
// within the same second is never taken for a late one. What a second hides
// the invariants do not see.
type Recorder struct {
	Kube     kubernetes.Interface
	Dynamic  dynamic.Interface
	Archive  Archive
	Interval time.Duration

	mu        sync.Mutex
	h         History
	seen      map[string]string // what was recorded of an object, by uid: no repeats
	confirmed map[string]bool   // TeamSpace uid + "/" + entry
	stored    map[string]bool   // archive keys
	hadQuota  map[string]bool   // namespaces sampled with their quota once
	last      map[string]sampled
}

// History is a copy of what was recorded so far.
func (r *Recorder) History() *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	return &History{Events: append([]Event(nil), r.h.Events...)}
}

// Add appends what the run observed beside the recorder: a fault
// injected, a memory sample.
func (r *Recorder) Add(e Event) { r.add(e) }

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.h.Add(e)
}

// once records e unless what of the object uid was recorded already.
func (r *Recorder) once(uid, what string, e Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if strings.Contains(r.seen[uid], "|"+what+"|") {
		return
	}
	r.seen[uid] += "|" + what + "|"
	r.h.Add(e)
}

// Run records until ctx ends.
func (r *Recorder) Run(ctx context.Context) error {
	r.seen, r.confirmed, r.stored, r.hadQuota, r.last = map[string]string{}, map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]sampled{}
	dyn := dynamicinformer.NewDynamicSharedInformerFactory(r.Dynamic, 0)
	tsInformer := dyn.ForResource(teamSpaces).Informer()
	kube := informers.NewSharedInformerFactory(r.Kube, 0)
	nsInformer := kube.Core().V1().Namespaces().Informer()
	quotas := kube.Core().V1().ResourceQuotas().Lister()

	_, _ = tsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.teamSpace(o) },
		UpdateFunc: func(_, o any) { r.teamSpace(o) },
		DeleteFunc: func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			if ts, ok := o.(*unstructured.Unstructured); ok {
				r.add(Event{At: time.Now(), Kind: TeamSpaceGone, TeamSpace: ts.GetName(), UID: string(ts.GetUID())})
			}
		},
	})
	_, _ = nsInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { r.namespace(o) },
		UpdateFunc: func(_, o any) { r.namespace(o) },
		DeleteFunc: func(o any) { r.namespaceGone(o, time.Now()) },
	})
	dyn.Start(ctx.Done())
	kube.Start(ctx.Done())
	dyn.WaitForCacheSync(ctx.Done())
	kube.WaitForCacheSync(ctx.Done())

	tick := time.NewTicker(r.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			r.mu.Lock()
			r.close(time.Time{}) // every object as last seen: the samples' end
			r.mu.Unlock()
			return nil
		case <-tick.C:
		}
		if r.Archive != nil {
			if recs, err := r.Archive(ctx); err == nil {
				for _, rec := range recs {
					r.record(rec)
				}
			}
		}
		r.sample(tsInformer.GetStore().List(), nsInformer.GetStore().List(), func(ns string) (*corev1.ResourceQuota, bool) {
			q, err := quotas.ResourceQuotas(ns).Get("team-quota")
			return q, err == nil
		})
	}
}

// teamSpace records a TeamSpace's deletion asked for and its confirmed
// removals.
func (r *Recorder) teamSpace(o any) {
	ts, ok := o.(*unstructured.Unstructured)
	if !ok {
		return
	}
	uid := string(ts.GetUID())
	if d := ts.GetDeletionTimestamp(); d != nil {
		r.once(uid, "deleting", Event{At: d.Time, Kind: TeamSpaceDeleting, TeamSpace: ts.GetName(), UID: uid})
	}
	for _, entry := range strings.Split(ts.GetAnnotations()[v1alpha1.RemoveNamespacesAnnotation], ",") {
		if entry = strings.TrimSpace(entry); entry != "" {
			r.once(uid, "confirmed "+entry, Event{At: time.Now(), Kind: RemovalConfirmed, TeamSpace: ts.GetName(), UID: uid, Entry: entry})
		}
	}
}

// namespace records a namespace of a TeamSpace (its controller's, or one
// labelled for a TeamSpace to adopt) when first seen as such, and its
// deletion begun.
func (r *Recorder) namespace(o any) {
	ns, ok := o.(*corev1.Namespace)
	if !ok {
		return
	}
	e := Event{Namespace: ns.Name, NamespaceUID: string(ns.UID), TeamSpace: ns.Labels[v1alpha1.TeamSpaceLabel]}
	if ref := metav1.GetControllerOf(ns); ref != nil && ref.Kind == v1alpha1.Kind {
		e.Owner, e.UID, e.TeamSpace = string(ref.UID), string(ref.UID), ref.Name
		if _, entry, found := strings.Cut(ns.Name, v1alpha1.NamespaceSeparator); found {
			e.Entry = entry
		}
	} else if t := ns.Labels[v1alpha1.AdoptLabel]; t != "" {
		e.TeamSpace, e.Adopted = t, true
	} else {
		return
	}
	seen := e
	seen.At, seen.Kind = time.Now(), NamespaceSeen
	r.once(string(ns.UID), "seen", seen)
	if d := ns.DeletionTimestamp; d != nil {
		e.At, e.Kind = d.Time.Add(time.Second-time.Nanosecond), NamespaceDeleting
		r.once(string(ns.UID), "deleting", e)
	}
}

// namespaceGone records a namespace seen gone at now. One deleted whole
// while the watch was down (a relist after an API server restart) was
// never seen going: it began to go at the latest when seen gone, so that
// the invariants judge its deletion rather than miss it.
func (r *Recorder) namespaceGone(o any, now time.Time) {
	if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
		o = d.Obj
	}
	if ns, ok := o.(*corev1.Namespace); ok && ns.DeletionTimestamp == nil {
		ns = ns.DeepCopy()
		ns.DeletionTimestamp = &metav1.Time{Time: now}
		o = ns
	}
	r.namespace(o)
}

// record adds a record of the archive's when first listed.
func (r *Recorder) record(rec StoredRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stored[rec.Key] {
		return
	}
	r.stored[rec.Key] = true
	r.h.Add(Event{At: rec.At, Kind: RecordStored, UID: rec.UID, Key: rec.Key})
}

// sample records, for every TeamSpace not being deleted, whether it is
// Ready, whether each of its namespaces (once it had its quota) has
// team-quota, and its quotas' pods and cpu together against its totals:
// each only when it differs from what was last recorded of it (a fleet of
// a thousand sampled twice a second for twenty minutes would otherwise
// hold millions of events), and once more, as last seen, when it is no
// longer sampled (closing): so that the samples read as a step function,
// each value holding until the next sample of its object.
func (r *Recorder) sample(teamspaces, namespaces []any, quota func(ns string) (*corev1.ResourceQuota, bool)) {
	now := time.Now()
	byOwner := map[string][]string{}
	for _, o := range namespaces {
		ns := o.(*corev1.Namespace)
		if ref := metav1.GetControllerOf(ns); ref != nil && ns.DeletionTimestamp == nil {
			byOwner[string(ref.UID)] = append(byOwner[string(ref.UID)], ns.Name)
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range teamspaces {
		ts := o.(*unstructured.Unstructured)
		if ts.GetDeletionTimestamp() != nil {
			continue
		}
		uid := string(ts.GetUID())
		r.changed(Event{At: now, Kind: ReadySample, TeamSpace: ts.GetName(), UID: uid, Present: Ready(ts)})
		sum := map[string]int64{}
		for _, ns := range byOwner[uid] {
			q, present := quota(ns)
			if present {
				r.hadQuota[ns] = true
			}
			if r.hadQuota[ns] {
				r.changed(Event{At: now, Kind: QuotaSample, TeamSpace: ts.GetName(), UID: uid, Namespace: ns, Present: present})
			}
			if present {
				for k, v := range quotaAmounts(q) {
					sum[k] += v
				}
			}
		}
		if len(byOwner[uid]) > 0 {
			r.changed(Event{At: now, Kind: TeamQuotas, TeamSpace: ts.GetName(), UID: uid, Totals: specTotals(ts), Sum: sum})
		}
	}
	r.close(now)
}

// sampled is what was last sampled of one object: the event recorded
// last, and when the object was last seen with that value.
type sampled struct {
	e    Event
	seen time.Time
}

// sampleKey names the object a sample is of.
func sampleKey(e Event) string { return string(e.Kind) + " " + e.UID + " " + e.Namespace }

// sameValue reports whether two samples of one object say the same.
func sameValue(a, b Event) bool {
	return a.Present == b.Present && maps.Equal(a.Sum, b.Sum) && maps.Equal(a.Totals, b.Totals)
}

// changed records e when it differs from the last sample recorded of its
// object (r.mu held).
func (r *Recorder) changed(e Event) {
	k := sampleKey(e)
	if last, ok := r.last[k]; ok && sameValue(last.e, e) {
		last.seen = e.At
		r.last[k] = last
		return
	}
	r.h.Add(e)
	r.last[k] = sampled{e: e, seen: e.At}
}

// close records, for every object not sampled at round (or all, for the
// zero time: the end), its value once more as last seen, unless that
// sample is recorded already (r.mu held).
func (r *Recorder) close(round time.Time) {
	for k, last := range r.last {
		if !round.IsZero() && last.seen.Equal(round) {
			continue
		}
		if last.seen.After(last.e.At) {
			e := last.e
			e.At = last.seen
			r.h.Add(e)
		}
		delete(r.last, k)
	}
}

// specTotals are what a TeamSpace's spec gives its quotas in all:
// pods, and requests.cpu in millicores (spec.cpu), the keys the
// invariants compare.
func specTotals(ts *unstructured.Unstructured) map[string]int64 {
	pods, _, _ := unstructured.NestedInt64(ts.Object, "spec", "pods")
	totals := map[string]int64{"pods": pods}
	cpu, _, _ := unstructured.NestedString(ts.Object, "spec", "cpu")
	if q, err := resource.ParseQuantity(cpu); err == nil {
		totals["requests.cpu"] = q.MilliValue()
	}
	return totals
}

// quotaAmounts is a quota's spec.hard in specTotals' keys.
func quotaAmounts(q *corev1.ResourceQuota) map[string]int64 {
	return map[string]int64{"pods": q.Spec.Hard.Pods().Value(),
		"requests.cpu": q.Spec.Hard.Name(corev1.ResourceRequestsCPU, resource.DecimalSI).MilliValue()}
}

// Ready reports whether a TeamSpace's Ready condition is True.
func Ready(ts *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == v1alpha1.ConditionReady {
			return m["status"] == "True"
		}
	}
	return false
}
