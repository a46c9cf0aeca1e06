package teamspace

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Existing namespaces taken in (spec.namespaces[].adopt, issue #66). What
// is decided:
//   - explicit: an entry names the namespace (only the platform team may:
//     hack/deploy/adopt.yaml) and the platform team confirms the plan by
//     labelling the namespace AdoptLabel=<TeamSpace> (as adopt.yaml allows
//     the platform team alone). Until then status.namespaces[].adoption is
//     the plan and nothing is written in it.
//   - never a child: the namespace gets no ownerReference, so neither the
//     engine nor the garbage collector ever deletes it (an adopted child
//     goes with its parent: metacontroller#539). Inside it the TeamSpace's
//     own objects are its children as in team-<name>: its share's quotas,
//     defaults, the owners' binding, the platform's copies, and
//     team-isolation only once adopt.enforce says so. A name the team
//     already uses there is reported (taken) and never answered, so that
//     the engine never writes over it.
//   - its labels and annotations are DecoratorController
//     teamspace-adopted's (adoptedMeta): Pod Security warn and audit at
//     the TeamSpace's level; with adopt.enforce, what team-<name> has
//     (enforce, isolation, node selector, what the team may use) and the
//     TeamSpace label, by which the platform's policies hold it. Until
//     then nothing tightens what runs there. The Pod Security labels found
//     are kept in AdoptFoundAnnotation and put back on release.
//   - release: the entry taken off, or the TeamSpace deleted: its objects
//     are no longer answered (the engine deletes them, not the garbage
//     collector) and the decorator puts the labels back. Nothing else of
//     the namespace's changes, then or ever.

// AdoptFoundAnnotation keeps, on an adopted namespace, the Pod Security
// labels it had before it was adopted (their keys and values, JSON), so
// that release puts them back.
const AdoptFoundAnnotation = v1alpha1.Group + "/adopt-found"

// AdoptedControllerName is the DecoratorController of adopted namespaces'
// labels (compositecontroller.yaml).
const AdoptedControllerName = "teamspace-adopted"

// Pod Security labels an adoption sets: warn and audit always, enforce
// with adopt.enforce; each with its version.
const (
	PodSecurityWarnLabel         = "pod-security.kubernetes.io/warn"
	PodSecurityWarnVersionLabel  = "pod-security.kubernetes.io/warn-version"
	PodSecurityAuditLabel        = "pod-security.kubernetes.io/audit"
	PodSecurityAuditVersionLabel = "pod-security.kubernetes.io/audit-version"
)

// podSecurityLabels are every Pod Security label, in the order they are
// described.
var podSecurityLabels = []string{PodSecurityEnforceLabel, PodSecurityEnforceVersionLabel, PodSecurityWarnLabel, PodSecurityWarnVersionLabel, PodSecurityAuditLabel, PodSecurityAuditVersionLabel}

// adoptable says why a namespace may not be adopted, "" when it may: the
// schema's rules on adopt.namespace, for a spec that bypassed them.
func adoptable(ns string) string {
	switch {
	case len(validation.IsDNS1123Label(ns)) > 0:
		return "is not a namespace name (a DNS-1123 label)"
	case strings.HasPrefix(ns, "kube-") || ns == "default" || ns == v1alpha1.SystemNamespace:
		return "is the cluster's or the platform's: never adopted"
	case strings.HasPrefix(ns, NamespacePrefix):
		return "is a TeamSpace's own (team-*): never adopted"
	}
	return ""
}

// adoptedKinds are the kinds the customize hook asks to see in an adopted
// namespace: what the team has there of the kinds the TeamSpace would
// create (taken names, the team's own objects, their use).
var adoptedKinds = []struct{ apiVersion, resource, key string }{
	{"v1", "resourcequotas", "ResourceQuota.v1"},
	{"v1", "limitranges", "LimitRange.v1"},
	{"rbac.authorization.k8s.io/v1", "rolebindings", "RoleBinding.rbac.authorization.k8s.io/v1"},
	{"networking.k8s.io/v1", "networkpolicies", "NetworkPolicy.networking.k8s.io/v1"},
}

// adoptionRules are the related objects of the namespaces a TeamSpace
// adopts (adopted): each namespace by name, and everything of
// adoptedKinds in it.
func adoptionRules(adopted []string) []RelatedResourceRule {
	var out []RelatedResourceRule
	for _, ns := range adopted {
		for _, k := range adoptedKinds {
			out = append(out, RelatedResourceRule{APIVersion: k.apiVersion, Resource: k.resource, Namespace: ns})
		}
	}
	return out
}

// adoptionState is where an adopted namespace is.
type adoptionState int

const (
	// adoptionMissing: the namespace does not exist, or is terminating.
	adoptionMissing adoptionState = iota
	// adoptionHeld: another TeamSpace, or another controller, holds it.
	adoptionHeld
	// adoptionPlanned: the plan is shown; the platform team has not
	// confirmed it.
	adoptionPlanned
	// adoptionConfirmed: labelled AdoptLabel=<TeamSpace>: adopted.
	adoptionConfirmed
)

// adoption says where unit u's adoption is and, but for a confirmed one,
// why it waits.
func (o *observation) adoption(u *unit) (adoptionState, string) {
	ns, state := o.namespace(u)
	switch {
	case ns == nil:
		return adoptionMissing, fmt.Sprintf("namespace %s does not exist; adopt takes in an existing namespace (without adopt, entry %s is a new namespace %s)", u.namespace, u.entry, ExtraNamespaceName(u.teamspace, u.entry))
	case state == namespaceTerminating:
		return adoptionMissing, fmt.Sprintf("namespace %s is terminating; it is not adopted", u.namespace)
	}
	if holder := heldElsewhere(ns, o.name); holder != "" {
		return adoptionHeld, fmt.Sprintf("namespace %s %s; it is not adopted: take it off there first", u.namespace, holder)
	}
	if ns.Metadata.Labels[v1alpha1.AdoptLabel] == o.name {
		return adoptionConfirmed, ""
	}
	return adoptionPlanned, fmt.Sprintf("adopting namespace %s waits for the platform team: nothing is written in it until %s (see status.namespaces[].adoption for what it adds and finds)", u.namespace, confirmCommand(u))
}

// heldElsewhere says who else holds an existing namespace: a controller
// (its ownerReference), another TeamSpace (its label), or another
// TeamSpace's adoption (AdoptLabel naming it); "" if nobody.
func heldElsewhere(ns *Object, teamspace string) string {
	for _, ref := range ns.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			return fmt.Sprintf("is controlled by %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
	}
	if t, ok := ns.Metadata.Labels[v1alpha1.TeamSpaceLabel]; ok && t != teamspace {
		return fmt.Sprintf("is TeamSpace %s's (label %s=%s)", t, v1alpha1.TeamSpaceLabel, t)
	}
	if t, ok := ns.Metadata.Labels[v1alpha1.AdoptLabel]; ok && t != teamspace {
		return fmt.Sprintf("is labelled for TeamSpace %s to adopt (%s=%s)", t, v1alpha1.AdoptLabel, t)
	}
	return ""
}

// confirmCommand is how the platform team confirms unit u's adoption.
func confirmCommand(u *unit) string {
	return fmt.Sprintf("kubectl label namespace %s %s=%s", u.namespace, v1alpha1.AdoptLabel, u.teamspace)
}

// releaseHow says how an adopted namespace is released.
func releaseHow(u *unit) string {
	return fmt.Sprintf("to release it, take entry %s off spec.namespaces (or delete TeamSpace %s), then kubectl label namespace %s %s-",
		u.entry, u.teamspace, u.namespace, v1alpha1.AdoptLabel)
}

// adoptedTypes are the child types answered in adopted unit u: what a
// namespace of the team holds but the namespace itself, team-isolation
// only with adopt.enforce, and none whose name the team already uses
// there (taken, "Kind name").
func (o *observation) adoptedTypes(u *unit) (types []*childType, taken []v1alpha1.KindName) {
	for _, t := range perNamespaceTypes {
		switch {
		case t == namespaceType:
		case t == networkPolicyType && !u.enforce:
		case o.takenBy(t, u) != nil:
			taken = append(taken, v1alpha1.KindName(t.kind+" "+t.name(u)))
		default:
			types = append(types, t)
		}
	}
	return types, taken
}

// takenBy is the object of the team's with the name of the TeamSpace's
// child of type t in adopted unit u, nil when there is none or it is the
// TeamSpace's own: controlled by the TeamSpace, or, for a quota, by the
// TeamSpace's LimitRange there (the DecoratorController's).
func (o *observation) takenBy(t *childType, u *unit) *Object {
	obj := o.related[t.key][t.ref(u)]
	if obj == nil || o.ours(obj, u) {
		return nil
	}
	return obj
}

// ours reports whether an object in unit u's namespace is the TeamSpace's
// own: its child, or a quota its LimitRange there controls.
func (o *observation) ours(obj *Object, u *unit) bool {
	if ownedBy(obj, o.uid) {
		return true
	}
	lr := o.children[limitRangeType.key][limitRangeType.ref(u)]
	return lr != nil && obj.Kind == quotaType.kind && ownedBy(obj, string(lr.Metadata.UID))
}

// teamsOwn are the objects of the related kind key in adopted unit u's
// namespace that are not the TeamSpace's: the team's own, by name.
func (o *observation) teamsOwn(u *unit, key string) []*Object {
	var out []*Object
	for _, k := range sortedKeys(o.related[key]) {
		obj := o.related[key][k]
		if obj.Metadata.Namespace == u.namespace && !o.ours(obj, u) {
			out = append(out, obj)
		}
	}
	return out
}

// foundQuotas counts the team's own quotas in adopted unit u's namespace,
// which team-objects' resourcequotas count must hold beside the
// platform's.
func (o *observation) foundQuotas(u *unit) int64 {
	return int64(len(o.teamsOwn(u, quotaType.key)))
}

// adoptionStatus is status.namespaces[].adoption of adopted unit u: the
// plan, kept up to date once confirmed.
func (o *observation) adoptionStatus(u *unit, confirmed bool) *v1alpha1.AdoptionStatus {
	s := &v1alpha1.AdoptionStatus{Confirmed: confirmed, Confirm: confirmCommand(u), Taken: u.takenNames}
	if confirmed {
		s.Confirm = releaseHow(u)
	}
	quotas := map[string]corev1.ResourceList{}
	for _, t := range u.types {
		obj := t.build(u, nil)
		if obj == nil {
			continue
		}
		if q, ok := obj.(*corev1.ResourceQuota); ok {
			quotas[t.name(u)] = q.Spec.Hard
		}
		s.Adds = append(s.Adds, v1alpha1.KindName(t.kind+" "+t.name(u)))
	}
	for _, c := range u.copies {
		s.Adds = append(s.Adds, v1alpha1.KindName(c.String()))
	}
	if hard := quotas[QuotaName]; hard != nil {
		s.Share = describeHard(hard)
	}
	ns, _ := o.namespace(u)
	if ns == nil {
		return s
	}
	if !confirmed {
		s.Use = o.foundUse(u, quotas[QuotaName])
	}
	found := describePodSecurity(ns.Metadata.Labels, AdoptFoundAnnotation, ns.Metadata.Annotations)
	sets := fmt.Sprintf("warn=%s, audit=%s (enforce left as found, the platform's policies not applied until adopt.enforce)", u.spec.PodSecurity, u.spec.PodSecurity)
	if u.enforce {
		sets = fmt.Sprintf("enforce=%s, warn=%s, audit=%s and label %s=%s (the platform's policies hold there)", u.spec.PodSecurity, u.spec.PodSecurity, u.spec.PodSecurity, v1alpha1.TeamSpaceLabel, u.teamspace)
	}
	s.PodSecurity = "found " + found + "; adoption sets " + sets
	for _, k := range adoptedKinds {
		for _, obj := range o.teamsOwn(u, k.key) {
			s.Own = append(s.Own, v1alpha1.KindName(obj.Kind+" "+obj.Metadata.Name))
		}
	}
	return s
}

// foundUse is what the quotas the team has in unit u's namespace count as
// used, against hard (the share), or why it is not known.
func (o *observation) foundUse(u *unit, hard corev1.ResourceList) string {
	used := corev1.ResourceList{}
	for _, key := range sortedKeys(o.related[quotaType.key]) {
		q := o.related[quotaType.key][key]
		if q.Metadata.Namespace != u.namespace {
			continue
		}
		for k, v := range q.Status.Used {
			used[k] = v
		}
	}
	var parts, unknown []string
	for _, k := range hardKeys {
		h, asked := hard[k]
		if !asked {
			continue
		}
		v, counted := used[k]
		if !counted {
			unknown = append(unknown, string(k))
			continue
		}
		over := ""
		if v.Cmp(h) > 0 {
			over = " (over the share: nothing is evicted, nothing more is admitted until it is within it)"
		}
		parts = append(parts, fmt.Sprintf("%s %s/%s%s", k, canonical(v), canonical(h), over))
	}
	if len(unknown) > 0 {
		parts = append(parts, "not counted by any quota there: "+strings.Join(unknown, ", ")+" (team-quota counts it once adopted)")
	}
	return strings.Join(parts, ", ")
}

// describePodSecurity prints the Pod Security labels of a namespace
// ("enforce=privileged, warn=baseline" or "none"); an adopted one's as
// they were before (found, in annotation key), when that is kept.
func describePodSecurity(labels map[string]string, key string, annotations map[string]string) string {
	if prior, ok := foundLabels(annotations[key]); ok {
		labels = prior
	}
	var parts []string
	for _, k := range podSecurityLabels {
		if v, ok := labels[k]; ok {
			parts = append(parts, strings.TrimPrefix(k, "pod-security.kubernetes.io/")+"="+v)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// foundLabels decodes AdoptFoundAnnotation.
func foundLabels(s string) (map[string]string, bool) {
	if s == "" {
		return nil, false
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return nil, false
	}
	return m, true
}

// adoptingEntry is the name of the entry of spec.namespaces that adopts
// namespace ns, read leniently (the spec may be invalid); ns itself when
// no entry does any more.
func (o *observation) adoptingEntry(ns string) string {
	for _, e := range lenientEntries(o.parent) {
		if e.Adopt != nil && e.Adopt.Namespace == ns {
			return e.Name
		}
	}
	return ns
}

// adoptedLevel says how an adopted namespace's Pod Security level holds:
// enforced, or warned about and audited.
func adoptedLevel(u *unit) string {
	if u.enforce {
		return "enforced"
	}
	return "warned and audited, not enforced"
}

// adoptedMeta is what DecoratorController teamspace-adopted answers for
// adopted unit u (nil values delete), found the Pod Security labels the
// namespace had before: Pod Security warn and audit at the TeamSpace's
// level, enforce as found; with adopt.enforce, what team-<name> has
// instead (namespaceType: enforce, isolation, node selector, what the
// team may use) and the TeamSpace label, by which the platform's policies
// (hack/deploy/team-use.yaml) hold the namespace as a team's. Every other
// key the TeamSpace owns on a namespace is removed.
func adoptedMeta(u *unit, found map[string]string) (labels, annotations map[string]*string) {
	labels, annotations = releasedMeta(found)
	str := func(s string) *string { return &s }
	labels[PodSecurityWarnLabel], labels[PodSecurityWarnVersionLabel] = str(u.spec.PodSecurity), str("latest")
	labels[PodSecurityAuditLabel], labels[PodSecurityAuditVersionLabel] = str(u.spec.PodSecurity), str("latest")
	if !u.enforce {
		return labels, annotations
	}
	ns := namespaceType.build(u, nil)
	labels[v1alpha1.TeamSpaceLabel] = str(u.teamspace)
	for k, v := range ns.GetLabels() {
		labels[k] = str(v)
	}
	for k, v := range ns.GetAnnotations() {
		annotations[k] = str(v)
	}
	return labels, annotations
}

// releasedMeta is a released namespace's: the Pod Security labels found
// put back, and every other key the TeamSpace owns on a namespace
// removed, AdoptFoundAnnotation too.
func releasedMeta(found map[string]string) (labels, annotations map[string]*string) {
	labels, annotations = map[string]*string{v1alpha1.TeamSpaceLabel: nil}, map[string]*string{AdoptFoundAnnotation: nil}
	for _, k := range append(slices.Clone(ownedNamespaceLabels), podSecurityLabels...) {
		labels[k] = foundValue(found, k)
	}
	for _, k := range ownedNamespaceAnnotations {
		annotations[k] = nil
	}
	return labels, annotations
}

func foundValue(found map[string]string, key string) *string {
	if v, ok := found[key]; ok {
		return &v
	}
	return nil
}

// podSecurityFound is what AdoptFoundAnnotation keeps of a namespace's
// labels: its Pod Security labels, JSON.
func podSecurityFound(labels map[string]string) string {
	b, _ := json.Marshal(owned(labels, podSecurityLabels))
	return string(b)
}

// metaDiffer names the labels or annotations of an adopted namespace
// (have) that are not as want says ("" when all are).
func metaDiffer(have map[string]string, want map[string]*string) []string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		v, has := have[k]
		switch w := want[k]; {
		case w == nil && has:
			out = append(out, k+" removed")
		case w != nil && (!has || v != *w):
			out = append(out, k+"="+*w)
		}
	}
	return out
}

// labelsPending says, of each adopted namespace answered, which of its
// labels and annotations DecoratorController teamspace-adopted has yet
// to set.
func (o *observation) labelsPending(answered []*unit) []string {
	var out []string
	for _, u := range answered {
		if !u.adopted {
			continue
		}
		ns, _ := o.namespace(u)
		found, ok := foundLabels(ns.Metadata.Annotations[AdoptFoundAnnotation])
		if !ok {
			found = owned(ns.Metadata.Labels, podSecurityLabels)
		}
		labels, annotations := adoptedMeta(u, found)
		delete(annotations, AdoptFoundAnnotation)
		missing := append(metaDiffer(ns.Metadata.Labels, labels), metaDiffer(ns.Metadata.Annotations, annotations)...)
		if !ok {
			missing = append(missing, "annotation "+AdoptFoundAnnotation)
		}
		if len(missing) > 0 {
			out = append(out, fmt.Sprintf("namespace %s: waiting for DecoratorController %s to set %s", u.namespace, AdoptedControllerName, strings.Join(missing, ", ")))
		}
	}
	return out
}

// AdoptedRequest is what DecoratorController teamspace-adopted sends: an
// existing namespace labelled AdoptLabel as object, and the TeamSpace
// the label names as its related object (none when there is no such
// TeamSpace).
type AdoptedRequest struct {
	Object  *Object              `json:"object"`
	Related map[string]ObjectMap `json:"related"`
}

// AdoptedResponse is the answer: the namespace's labels and annotation
// (nil values delete). Status is always null (the namespace's is left
// alone) and Attachments never null: it has none.
type AdoptedResponse struct {
	Labels      map[string]*string `json:"labels"`
	Annotations map[string]*string `json:"annotations"`
	Status      *struct{}          `json:"status"`
	Attachments []map[string]any   `json:"attachments"`
}

// Validate checks that the request is one Adopted can answer: a namespace
// labelled AdoptLabel, and TeamSpaces alone related.
func (r *AdoptedRequest) Validate() error {
	p := r.Object
	if p == nil {
		return badRequest("MissingParent", "request has no object")
	}
	if p.APIVersion != "v1" || p.Kind != "Namespace" {
		return badRequest("WrongKind", "object is apiVersion %q kind %q, want a Namespace", p.APIVersion, p.Kind)
	}
	if p.Metadata.Labels[v1alpha1.AdoptLabel] == "" {
		return badRequest("NotAdopted", "namespace %s has no label %s", p.Metadata.Name, v1alpha1.AdoptLabel)
	}
	for k := range r.Related {
		if k != teamSpacesKey {
			return badRequest("UnexpectedRelated", "related objects of type %q are not asked for by %s (want %s)", k, AdoptedControllerName, teamSpacesKey)
		}
	}
	return nil
}

// AdoptedCustomize asks the engine to show the TeamSpace the namespace's
// AdoptLabel names: the decorator is called again whenever it changes.
func AdoptedCustomize(r *AdoptedRequest) *CustomizeResponse {
	rules := []RelatedResourceRule{}
	if r.Object != nil {
		if ts := r.Object.Metadata.Labels[v1alpha1.AdoptLabel]; ts != "" {
			rules = append(rules, RelatedResourceRule{APIVersion: v1alpha1.APIVersion, Resource: "teamspaces", Names: []string{ts}})
		}
	}
	return &CustomizeResponse{RelatedResources: rules}
}

// Adopted answers DecoratorController teamspace-adopted: the labels of a
// namespace labelled AdoptLabel=<TeamSpace>. While that TeamSpace adopts
// it (an entry's adopt names it, and nobody else holds it), the TeamSpace
// label and its Pod Security level (adoptedLabels), with the Pod Security
// labels found kept in AdoptFoundAnnotation; otherwise (no such
// TeamSpace, it is being deleted, or no entry adopts the namespace any
// more) those labels are put back and the TeamSpace label goes
// (releasedLabels); nothing for a namespace never adopted. A TeamSpace
// whose spec does not parse changes nothing: a rejected spec never
// weakens what exists.
func Adopted(r *AdoptedRequest) *AdoptedResponse {
	ns, name := r.Object, r.Object.Metadata.Labels[v1alpha1.AdoptLabel]
	resp := &AdoptedResponse{Labels: map[string]*string{}, Annotations: map[string]*string{}, Attachments: []map[string]any{}}
	found, kept := foundLabels(ns.Metadata.Annotations[AdoptFoundAnnotation])
	u, ok := adoptingUnit(r.Related[teamSpacesKey][name], ns.Metadata.Name)
	if !ok {
		return resp
	}
	if u != nil && heldElsewhere(ns, name) == "" {
		f := ns.Metadata.Annotations[AdoptFoundAnnotation]
		if !kept {
			f = podSecurityFound(ns.Metadata.Labels)
			found, _ = foundLabels(f)
		}
		resp.Labels, resp.Annotations = adoptedMeta(u, found)
		resp.Annotations[AdoptFoundAnnotation] = &f
		return resp
	}
	if !kept {
		return resp // never adopted, or released already
	}
	resp.Labels, resp.Annotations = releasedMeta(found)
	if ns.Metadata.Labels[v1alpha1.TeamSpaceLabel] != name {
		delete(resp.Labels, v1alpha1.TeamSpaceLabel) // not ours to remove
	}
	return resp
}

// adoptingUnit is the unit of TeamSpace ts (nil: none) that adopts
// namespace ns; nil when none does or ts is gone or being deleted, and ok
// false when its spec does not parse.
func adoptingUnit(ts *Object, ns string) (u *unit, ok bool) {
	if ts == nil || ts.Metadata.DeletionTimestamp != nil {
		return nil, true
	}
	spec, err := ParseSpec(ts.Spec)
	if err != nil {
		return nil, false
	}
	for _, u := range units(ts.Metadata.Name, spec, nil) {
		if u.adopted && u.namespace == ns {
			return u, true
		}
	}
	return nil, true
}
