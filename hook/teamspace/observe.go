package teamspace

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The observe stage: the one reader of a request's children and related
// objects. Sync and Finalize read the request through an observation and
// nothing else, so that what the engine shows is read once, and each of
// its forms that an upgrade left behind (the quotas as children or as the
// DecoratorController's report, the templates as related objects or in
// their bundle) is turned into one observed value here: these branches
// live in this file alone, and go from it in one change when the old form
// is no longer answered.

// observation is what the engine showed a sync or finalize call.
type observation struct {
	parent *Parent
	// name is the TeamSpace's name, uid its uid.
	name, uid string
	// at is the newest time the request shows (observedAt), zero until
	// now asks for it.
	at time.Time
	// viaDecorator: the quotas are the DecoratorController's
	// (quotasViaDecorator), not the CompositeController's children.
	viaDecorator bool
	// units are the namespaces of the TeamSpace the engine shows anything
	// of (observedUnits).
	units []*unit
	// templates are the platform's templates, known false when their
	// bundle is missing or does not decode (bundleTemplates); read is
	// whether shownTemplates has read them.
	templates   []*template
	known, read bool

	children, related map[string]ObjectMap
	// reported caches each quota rebuilt from its carrier's report, by
	// engine key and ref, and namespaces each namespace with its state, by
	// name: each read once per request.
	reported   map[string]*Object
	namespaces map[string]observedNamespace
}

// observedNamespace is a namespace of the TeamSpace as the engine shows
// it among the children (nil if none) and where it is in its life.
type observedNamespace struct {
	obj   *Object
	state namespaceState
}

// Validate checks that the request is one this hook can answer: a TeamSpace
// parent with a name that can become a namespace and a safe uid, and only the
// child types the controller declares. The spec is not checked here.
func (r *Request) Validate() error {
	p := r.Parent
	if p == nil {
		return badRequest("MissingParent", "request has no parent object")
	}
	if p.APIVersion != v1alpha1.APIVersion || p.Kind != v1alpha1.Kind {
		return badRequest("WrongKind", "parent is apiVersion %q kind %q, want apiVersion %q kind %q", p.APIVersion, p.Kind, v1alpha1.APIVersion, v1alpha1.Kind)
	}
	if err := ValidateName(p.Metadata.Name); err != nil {
		return err
	}
	if !uidPattern.MatchString(string(p.Metadata.UID)) {
		return badRequest("InvalidUID", "parent metadata.uid %q is not a Kubernetes uid", p.Metadata.UID)
	}
	for key, objs := range r.Children {
		kind := ""
		if t := childTypeByKey(key); t != nil {
			kind = t.kind
		} else if k := copyKindByKey(key); k != nil {
			kind = k.kind
		} else {
			return badRequest("UnexpectedChild", "children of type %q are not managed by TeamSpace (want one of %s)", key, strings.Join(append(childTypeKeys(), copyKeys()...), ", "))
		}
		for name, o := range objs {
			if o == nil || o.Kind != kind {
				return badRequest("UnexpectedChild", "children[%q][%q] is not a %s", key, name, kind)
			}
		}
	}
	return nil
}

// observe reads a request that passed Validate.
func observe(r *Request) *observation {
	o := &observation{parent: r.Parent, name: r.Parent.Metadata.Name, uid: string(r.Parent.Metadata.UID),
		children: r.Children, related: r.Related, reported: map[string]*Object{}, namespaces: map[string]observedNamespace{}}
	o.viaDecorator = quotasViaDecorator(r.Children)
	o.units = o.observedUnits()
	return o
}

// now is the newest time the request shows (observedAt), computed when
// first asked: only a condition that changes and a removal's record need
// it.
func (o *observation) now() time.Time {
	if o.at.IsZero() {
		o.at = observedAt(o.parent, o.children)
	}
	return o.at
}

// shownTemplates are the platform's templates the request shows, and
// whether they are known (bundleTemplates), read when first asked: only a
// valid spec's sync needs them, and the bundle may be a megabyte that
// finalize and a kept TeamSpace's sync need not decode.
func (o *observation) shownTemplates() ([]*template, bool) {
	if !o.read {
		o.templates, o.known = bundleTemplates(o.related)
		o.read = true
	}
	return o.templates, o.known
}

// quotasViaDecorator reports whether the CompositeController leaves the
// quotas to the DecoratorController (quotas.go): it declares no
// ResourceQuota child, and the engine sends every type it declares. A
// CompositeController that still declares them (one applied before, while
// the hook is upgraded first) gets them answered as children, as it always
// did: without them it would delete every quota.
func quotasViaDecorator(children map[string]ObjectMap) bool {
	_, declared := children[quotaType.key]
	return !declared
}

// observedAt is the newest timestamp in the request: creation, deletion and
// managedFields times of the parent and every child. It stands in for "now"
// without making the answer depend on when it is computed.
func observedAt(parent *Parent, children map[string]ObjectMap) time.Time {
	var latest time.Time
	consider := func(m *Meta) {
		for _, t := range []*metav1.Time{&m.CreationTimestamp, m.DeletionTimestamp} {
			if t != nil && t.After(latest) {
				latest = t.Time
			}
		}
		for _, f := range m.ManagedFields {
			if f.Time != nil && f.Time.After(latest) {
				latest = f.Time.Time
			}
		}
	}
	consider(&parent.Metadata)
	for _, objs := range children {
		for _, o := range objs {
			consider(&o.Metadata)
		}
	}
	if latest.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return latest.UTC()
}

// bundleTemplates are the templates a TeamSpace's request shows: as
// related objects (an engine holding an older customize answer, which
// shows a key for each of the four rules, a template or not), or in the
// bundle. known is false when the bundle is missing or does not decode.
func bundleTemplates(related map[string]ObjectMap) (templates []*template, known bool) {
	// Only the template rules ask for NetworkPolicies and RoleBindings:
	// their keys are there, empty or not, when the engine used them.
	if t := templatesIn(related); len(t) > 0 || related[networkPolicyType.key] != nil || related[roleBindingType.key] != nil {
		return t, true
	}
	return decodeBundle(related[bundleKind.key][TemplatesNamespace+"/"+TemplatesBundleName])
}

// observedUnits are the namespaces of the TeamSpace the engine shows
// anything of, as units without a spec, team-<name> first, then the
// others sorted: what is kept while the spec is invalid, the requester
// is over the allowance, or the archive cannot be written. Found from
// the observed children themselves, not from a spec that may be invalid.
func (o *observation) observedUnits() []*unit {
	prefix := NamespaceName(o.name) + v1alpha1.NamespaceSeparator
	seen, adopted := map[string]bool{}, map[string]bool{}
	for typeKey, objs := range o.children {
		for key := range objs {
			ns, _, namespaced := strings.Cut(key, "/")
			switch {
			case (namespaced || typeKey == namespaceType.key) && strings.HasPrefix(ns, prefix):
				seen[ns] = true
			case namespaced && ns != NamespaceName(o.name):
				// Children in a namespace not of the TeamSpace's names:
				// one it adopted (adopt.go), named as its entry.
				adopted[ns] = true
			}
		}
	}
	out := []*unit{mainUnit(o.name, Spec{})}
	for _, ns := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, &unit{teamspace: o.name, namespace: ns, entry: strings.TrimPrefix(ns, prefix)})
	}
	for _, ns := range slices.Sorted(maps.Keys(adopted)) {
		u := &unit{teamspace: o.name, namespace: ns, entry: o.adoptingEntry(ns), adopted: true}
		u.types = insideTypes
		out = append(out, u)
	}
	return out
}

// teamUnit is team-<name> without a spec: for what depends on names only.
func (o *observation) teamUnit() *unit { return o.units[0] }

// child is the child of type t in unit u the engine shows for this
// TeamSpace (nil if none); a quota the DecoratorController makes as its
// carrier reports it. A request recorded before the controller declared a
// child type has no key for it: that is the same as none observed.
func (o *observation) child(t *childType, u *unit) *Object {
	if t.viaDecorator && o.viaDecorator {
		return o.reportedQuota(t, u)
	}
	return o.children[t.key][t.ref(u)]
}

// asChild reports whether a child of type t is answered as the
// TeamSpace's child: every type but a quota the DecoratorController
// makes, which its carrier's QuotasAnnotation asks for instead.
func (o *observation) asChild(t *childType) bool { return !(t.viaDecorator && o.viaDecorator) }

// carries reports whether a child of type t carries its namespace's quotas
// for the DecoratorController (QuotasAnnotation).
func (o *observation) carries(t *childType) bool { return t == quotasCarrier && o.viaDecorator }

// madeBy is what a pending child of unit u's message adds about who makes
// it: the DecoratorController, for its quotas, and where its errors are
// (its parent's events: a create refused, as when a quota of the
// LimitRange's predecessor was never collected, README "When things
// fail").
func (o *observation) madeBy(t *childType, u *unit) string {
	if o.asChild(t) {
		return ""
	}
	if o.carrier(u) == nil {
		return " by DecoratorController " + QuotasControllerName + " once LimitRange " + quotasCarrier.ref(u) + " is there"
	}
	return fmt.Sprintf(" by DecoratorController %s (if this lasts, its error is in the events of LimitRange %s: kubectl describe limitrange -n %s %s)",
		QuotasControllerName, quotasCarrier.ref(u), u.namespace, quotasCarrier.name(u))
}

// quotaFigures are unit u's entry of status.namespaces as its quota says:
// its figures and where it is over its share. The DecoratorController's
// quotas keep no figures in the TeamSpace (they change with every pod:
// each would cost a sync of it) and report the over-share on the carrier.
func (o *observation) quotaFigures(u *unit) (*Usage, string) {
	if o.viaDecorator {
		if c := o.carrier(u); c != nil {
			return nil, c.Metadata.Annotations[v1alpha1.OverShareAnnotation]
		}
		return nil, ""
	}
	if quota := o.child(quotaType, u); quota != nil {
		return quotaUsage(quota), overShare(quota)
	}
	return nil, ""
}

// teamUsage is status.usage: the team's quotas' figures summed, for quotas
// that are the CompositeController's children; nil for the
// DecoratorController's, whose figures are read live (README "Usage").
func (o *observation) teamUsage() *Usage {
	if o.viaDecorator {
		return nil
	}
	var quotas []*Object
	for _, u := range o.units {
		quotas = append(quotas, o.child(quotaType, u))
	}
	return quotaUsage(quotas...)
}

// quotasCarrier is the child of a unit that carries its quotas for the
// DecoratorController, and its report of them (quotas.go): the LimitRange.
var quotasCarrier = limitRangeType

// carrier is unit u's observed quotas carrier, nil if none.
func (o *observation) carrier(u *unit) *Object {
	return o.children[quotasCarrier.key][quotasCarrier.ref(u)]
}

// reportedQuota is the quota of type t in unit u as the DecoratorController
// reports it on the observed carrier (QuotasObservedAnnotation): its
// name, namespace, the TeamSpace label and spec.hard, and as last applied
// what the carrier was last asked to hold (childType.kept); nil when the
// carrier is not observed or the report has no such quota.
func (o *observation) reportedQuota(t *childType, u *unit) *Object {
	id := t.key + " " + t.ref(u)
	if q, ok := o.reported[id]; ok {
		return q
	}
	var q *Object
	if carrier := o.carrier(u); carrier != nil {
		reported, err := quotasOf(carrier.Metadata.Annotations, v1alpha1.QuotasObservedAnnotation)
		if hard, ok := reported[t.name(u)]; err == nil && ok {
			q = &Object{APIVersion: t.apiVersion, Kind: t.kind, Metadata: Meta{
				Name: t.name(u), Namespace: u.namespace, Labels: map[string]string{v1alpha1.TeamSpaceLabel: u.teamspace},
			}}
			q.Spec, _ = json.Marshal(corev1.ResourceQuotaSpec{Hard: hard})
			var last metav1.PartialObjectMetadata
			if decodeLastApplied(carrier, &last) {
				if applied, err := quotasOf(last.Annotations, v1alpha1.QuotasAnnotation); err == nil {
					if hard, ok := applied[t.name(u)]; ok {
						b, _ := json.Marshal(corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: hard}})
						q.Metadata.Annotations = map[string]string{LastAppliedAnnotation: string(b)}
					}
				}
			}
		}
	}
	o.reported[id] = q
	return q
}

// LastAppliedAnnotation is where the engine keeps the child it last
// applied (the engine's, not the project's: read here alone).
const LastAppliedAnnotation = "metacontroller.k8s.io/last-applied-configuration"

// decodeLastApplied decodes into the object the engine last applied as o
// (its annotation); false if there is none or it does not parse. The one
// reader of the engine's annotation.
func decodeLastApplied(o *Object, into any) bool {
	last, ok := o.Metadata.Annotations[LastAppliedAnnotation]
	return ok && json.Unmarshal([]byte(last), into) == nil
}

// namespace is unit u's namespace as the engine shows it among the
// children (nil if none) and where it is in its life: the one place its
// state is read from (which children are asked for, whether the TeamSpace
// is still being created, why it is not Ready, status.namespaces,
// finalize's message).
func (o *observation) namespace(u *unit) (*Object, namespaceState) {
	if n, ok := o.namespaces[u.namespace]; ok {
		return n.obj, n.state
	}
	n := observedNamespace{obj: o.child(namespaceType, u)}
	if u.adopted {
		// Never a child: the customize hook asks for it by name.
		n.obj = o.related[namespaceType.key][u.namespace]
	}
	switch {
	case n.obj == nil:
		n.state = namespaceMissing
	case isTerminating(n.obj):
		n.state = namespaceTerminating
	case n.obj.Status.Phase != "Active":
		n.state = namespaceNotActive
	default:
		n.state = namespaceActive
	}
	o.namespaces[u.namespace] = n
	return n.obj, n.state
}

// teamNamespace is team-<name> as the engine shows it among the children,
// nil if none.
func (o *observation) teamNamespace() *Object {
	ns, _ := o.namespace(o.teamUnit())
	return ns
}

// foreign is the object of type t with the name of this TeamSpace's child
// in unit u that the engine shows only as a related object (the customize
// hook asks for it by name) because another owner holds it, and who that
// is; nil when there is none or it is the TeamSpace's own. The engine
// never adopts it.
func (o *observation) foreign(t *childType, u *unit) (*Object, string) {
	if o.child(t, u) != nil {
		return nil, ""
	}
	obj := o.related[t.key][t.ref(u)]
	if obj == nil || ownedBy(obj, o.uid) {
		return nil, ""
	}
	holder := "was not created for this TeamSpace"
	for _, ref := range obj.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			holder = fmt.Sprintf("is controlled by %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
	}
	return obj, holder
}

// hasChildren reports whether the engine still observes any child.
func (o *observation) hasChildren() bool {
	for _, objs := range o.children {
		if len(objs) > 0 {
			return true
		}
	}
	return false
}

// childKeys are the keys of the observed children of an engine key,
// sorted.
func (o *observation) childKeys(key string) []string { return sortedKeys(o.children[key]) }

// copy is the copy of t the engine shows in u's namespace.
func (o *observation) copy(t *template, u *unit) *Object {
	return o.children[t.kind.key][u.namespace+"/"+t.obj.Metadata.Name]
}

// copiesSeen counts the copies the engine shows in unit u's namespace
// (those of templates gone too: they are there until deleted), by the
// team-objects key that counts them.
func (o *observation) copiesSeen(u *unit) map[corev1.ResourceName]int64 {
	var out map[corev1.ResourceName]int64
	prefix := u.namespace + "/"
	for _, k := range copyKinds {
		if k.counted == "" {
			continue
		}
		for key := range o.children[k.key] {
			if name, inUnit := strings.CutPrefix(key, prefix); inUnit && !ownName(k, name, u) {
				if out == nil {
					out = map[corev1.ResourceName]int64{}
				}
				out[k.counted]++
			}
		}
	}
	return out
}

// keptTemplates are the copies observed in unit u's namespace as the
// templates they were made of (their content as the engine last applied
// it), in kind and name order: what keeps them as they are.
func (o *observation) keptTemplates(u *unit) []*template {
	var out []*template
	prefix := u.namespace + "/"
	for _, k := range copyKinds {
		objs := o.children[k.key]
		for _, key := range sortedKeys(objs) {
			obj := objs[key]
			// The name as the engine keys it: what it applies is keyed so.
			name, inUnit := strings.CutPrefix(key, prefix)
			if !inUnit || ownName(k, name, u) {
				continue
			}
			source := obj
			var last Object
			if decodeLastApplied(obj, &last) {
				source = &last
			}
			kept := *source
			kept.Metadata = Meta{Name: name, Labels: source.Metadata.Labels}
			out = append(out, &template{kind: k, obj: &kept})
		}
	}
	return out
}

// limits is the platform limits ConfigMap the engine shows (nil if none),
// and siblings the TeamSpaces of the same requester label: what the
// allowance is read from (Customize asks for both).
func (o *observation) limits() *Object {
	return o.related[limitsKey][v1alpha1.SystemNamespace+"/"+v1alpha1.LimitsName]
}

func (o *observation) siblings() ObjectMap { return o.related[teamSpacesKey] }
