package robust

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Final is the cluster as it stands once the run has converged: what the
// invariants of the final state judge.
type Final struct {
	// TeamSpaces not being deleted.
	TeamSpaces []*unstructured.Unstructured
	// Namespaces: by name, the controller's uid ("" for none) of each
	// namespace not being deleted.
	Namespaces map[string]string
	// Quotas: the namespaces that hold team-quota.
	Quotas map[string]bool
	// Hard: team-quota's pods and requests.cpu (millicores) by namespace.
	Hard map[string]map[string]int64
	// QuotaOwners: the controller's uid of each quota labelled for a
	// TeamSpace ("namespace/name"); LimitRanges: the uid of each
	// namespace's team-defaults, the quotas' parent.
	QuotaOwners, LimitRanges map[string]string
	// Labelled: "kind namespace/name" of every quota, LimitRange and
	// RoleBinding to the TeamSpace its label names.
	Labelled map[string]string
}

// ReadFinal lists what Final holds.
func ReadFinal(ctx context.Context, kube kubernetes.Interface, dyn dynamic.Interface) (*Final, error) {
	f := &Final{Namespaces: map[string]string{}, Quotas: map[string]bool{}, Labelled: map[string]string{},
		QuotaOwners: map[string]string{}, LimitRanges: map[string]string{}, Hard: map[string]map[string]int64{}}
	list, err := dyn.Resource(teamSpaces).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		if list.Items[i].GetDeletionTimestamp() == nil {
			f.TeamSpaces = append(f.TeamSpaces, &list.Items[i])
		}
	}
	nss, err := kube.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, ns := range nss.Items {
		if ns.DeletionTimestamp != nil {
			continue
		}
		f.Namespaces[ns.Name] = ""
		if ref := metav1.GetControllerOf(&ns); ref != nil && ref.Kind == v1alpha1.Kind {
			f.Namespaces[ns.Name] = string(ref.UID)
		}
	}
	sel := metav1.ListOptions{LabelSelector: v1alpha1.TeamSpaceLabel}
	quotas, err := kube.CoreV1().ResourceQuotas("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, q := range quotas.Items {
		if q.Name == "team-quota" {
			f.Quotas[q.Namespace] = true
			f.Hard[q.Namespace] = quotaAmounts(&q)
		}
		if t := q.Labels[v1alpha1.TeamSpaceLabel]; t != "" {
			f.Labelled["ResourceQuota "+q.Namespace+"/"+q.Name] = t
			f.QuotaOwners[q.Namespace+"/"+q.Name] = ""
			if ref := metav1.GetControllerOf(&q); ref != nil {
				f.QuotaOwners[q.Namespace+"/"+q.Name] = string(ref.UID)
			}
		}
	}
	lrs, err := kube.CoreV1().LimitRanges("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range lrs.Items {
		f.Labelled["LimitRange "+o.Namespace+"/"+o.Name] = o.Labels[v1alpha1.TeamSpaceLabel]
		if o.Name == "team-defaults" {
			f.LimitRanges[o.Namespace] = string(o.UID)
		}
	}
	rbs, err := kube.RbacV1().RoleBindings("").List(ctx, sel)
	if err != nil {
		return nil, err
	}
	for _, o := range rbs.Items {
		f.Labelled["RoleBinding "+o.Namespace+"/"+o.Name] = o.Labels[v1alpha1.TeamSpaceLabel]
	}
	return f, nil
}

// wanted is the namespaces a TeamSpace's spec asks for: team-<name>, one
// per extra entry, and the ones it adopts (adopted: true).
func wanted(ts *unstructured.Unstructured) map[string]bool {
	out := map[string]bool{"team-" + ts.GetName(): false}
	entries, _, _ := unstructured.NestedSlice(ts.Object, "spec", "namespaces")
	for _, e := range entries {
		m, _ := e.(map[string]any)
		if ns, ok, _ := unstructured.NestedString(m, "adopt", "namespace"); ok {
			out[ns] = true
		} else {
			out["team-"+ts.GetName()+v1alpha1.NamespaceSeparator+fmt.Sprint(m["name"])] = false
		}
	}
	return out
}

// FinalInvariants are the rules of the converged state, in the order they
// are reported.
var FinalInvariants = []struct {
	Name  string
	Check func(*Final) []Violation
}{
	{"children-as-spec", childrenAsSpec},
	{"quotas-of-their-limitrange", quotasOfTheirLimitRange},
	{"quotas-within-totals-at-rest", quotasWithinTotalsAtRest},
	{"nothing-in-another-team", nothingInAnotherTeam},
}

// CheckFinal runs every rule of FinalInvariants over f.
func CheckFinal(f *Final) []Violation {
	var out []Violation
	for _, inv := range FinalInvariants {
		out = append(out, inv.Check(f)...)
	}
	return out
}

// childrenAsSpec: every live TeamSpace has exactly the namespaces its
// spec asks for (its own controlled by it, the adopted ones there), each
// with team-quota; no namespace is controlled by a TeamSpace that is not
// live.
func childrenAsSpec(f *Final) []Violation {
	var out []Violation
	live := map[string]bool{}
	for _, ts := range f.TeamSpaces {
		uid := string(ts.GetUID())
		live[uid] = true
		want := wanted(ts)
		for _, ns := range slices.Sorted(maps.Keys(want)) {
			owner, exists := f.Namespaces[ns]
			switch {
			case !exists:
				out = append(out, Violation{"children-as-spec", fmt.Sprintf("TeamSpace %s asks for namespace %s, which does not exist", ts.GetName(), ns), []string{"TeamSpace " + ts.GetName() + " " + uid, "Namespace " + ns}})
				continue
			case !want[ns] && owner != uid:
				out = append(out, Violation{"children-as-spec", fmt.Sprintf("namespace %s of TeamSpace %s is controlled by %q", ns, ts.GetName(), owner), []string{"TeamSpace " + ts.GetName() + " " + uid, "Namespace " + ns}})
			}
			if !f.Quotas[ns] {
				out = append(out, Violation{"children-as-spec", fmt.Sprintf("namespace %s of TeamSpace %s has no team-quota", ns, ts.GetName()), []string{"TeamSpace " + ts.GetName() + " " + uid, "Namespace " + ns}})
			}
		}
		for _, ns := range slices.Sorted(maps.Keys(f.Namespaces)) {
			if f.Namespaces[ns] == uid {
				if _, ok := want[ns]; !ok {
					out = append(out, Violation{"children-as-spec", fmt.Sprintf("namespace %s is TeamSpace %s's, which does not ask for it", ns, ts.GetName()), []string{"TeamSpace " + ts.GetName() + " " + uid, "Namespace " + ns}})
				}
			}
		}
	}
	for _, ns := range slices.Sorted(maps.Keys(f.Namespaces)) {
		if owner := f.Namespaces[ns]; owner != "" && !live[owner] {
			out = append(out, Violation{"children-as-spec", fmt.Sprintf("namespace %s is controlled by TeamSpace uid %s, which is not live", ns, owner), []string{"Namespace " + ns}})
		}
	}
	return out
}

// quotasOfTheirLimitRange: every quota of a team is the attachment of its
// namespace's LimitRange team-defaults, the parent the engine keeps it as
// asked through; one whose controller is gone (a LimitRange deleted, its
// quota left by the garbage collector) is a quota nobody repairs.
func quotasOfTheirLimitRange(f *Final) []Violation {
	var out []Violation
	for _, key := range slices.Sorted(maps.Keys(f.QuotaOwners)) {
		ns, _, _ := strings.Cut(key, "/")
		if lr, ok := f.LimitRanges[ns]; ok && f.QuotaOwners[key] != lr {
			out = append(out, Violation{"quotas-of-their-limitrange", fmt.Sprintf("ResourceQuota %s is controlled by uid %q, not by LimitRange %s/team-defaults (uid %s)", key, f.QuotaOwners[key], ns, lr), []string{"ResourceQuota " + key, "LimitRange " + ns + "/team-defaults " + lr}})
		}
	}
	return out
}

// quotasWithinTotalsAtRest: once converged, the team-quotas of a
// TeamSpace's namespaces hold together at most its spec's pods and cpu.
func quotasWithinTotalsAtRest(f *Final) []Violation {
	var out []Violation
	for _, ts := range f.TeamSpaces {
		totals := specTotals(ts)
		sum := map[string]int64{}
		for ns := range wanted(ts) {
			for k, v := range f.Hard[ns] {
				sum[k] += v
			}
		}
		for _, k := range slices.Sorted(maps.Keys(totals)) {
			if sum[k] > totals[k] {
				out = append(out, Violation{"quotas-within-totals-at-rest", fmt.Sprintf("TeamSpace %s's quotas hold %s %d together, its total is %d", ts.GetName(), k, sum[k], totals[k]), []string{"TeamSpace " + ts.GetName() + " " + string(ts.GetUID())}})
			}
		}
	}
	return out
}

// nothingInAnotherTeam: every object labelled for a TeamSpace that sits
// in a namespace of a live TeamSpace sits in one of its own.
func nothingInAnotherTeam(f *Final) []Violation {
	whose := map[string]string{}
	for _, ts := range f.TeamSpaces {
		for ns := range wanted(ts) {
			whose[ns] = ts.GetName()
		}
	}
	var out []Violation
	for _, obj := range slices.Sorted(maps.Keys(f.Labelled)) {
		_, ref, _ := strings.Cut(obj, " ") // "kind namespace/name"
		ns, _, _ := strings.Cut(ref, "/")
		if owner, ok := whose[ns]; ok && owner != f.Labelled[obj] {
			out = append(out, Violation{"nothing-in-another-team", fmt.Sprintf("%s, labelled for TeamSpace %s, is in namespace %s of TeamSpace %s", obj, f.Labelled[obj], ns, owner), []string{obj}})
		}
	}
	return out
}
