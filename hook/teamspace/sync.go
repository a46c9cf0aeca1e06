package teamspace

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Sync computes the desired children and status of a TeamSpace from what the
// engine observed. The request must have passed Validate.
//
// The children inside the namespace are asked for only once the namespace
// exists and is not terminating: creating them earlier fails and costs a
// retry with backoff. An invalid spec never removes or weakens what exists:
// every child the engine last applied is answered again until the spec is
// fixed.
func Sync(r *Request) *Response { return syncWith(r, nil) }

// SyncBlocked is Sync when the archive records of the namespaces it
// removes (Response.Removals) could not be stored (err says why): those
// namespaces are kept with everything in them, the status says why
// (ArchivePending), and the engine asks again in ArchiveRetrySeconds.
func SyncBlocked(r *Request, err error) *Response { return syncWith(r, err) }

// syncWith is the sync hook in stages, each a function of what the one
// before it made: observe reads the request once (observe.go), planSync
// parses the spec and decides what is answered (the units of a valid
// spec, or what to keep), answer builds the children, readiness says why
// the TeamSpace is or is not Ready (ready.go) and the status is written
// last, from all of them.
func syncWith(r *Request, blocked error) *Response {
	p := planSync(observe(r), blocked)
	a := answer(p)
	status, reason, msg := readiness(p, a)
	return p.respond(a, status, reason, msg)
}

// plan is what a sync decided: which of its forms the answer takes (the
// first of conflict, invalid, over that is set; else a valid spec's),
// and for a valid spec its units, each built once and not changed after.
type plan struct {
	o *observation
	// conflict: team-<name> is someone else's; nothing is answered.
	conflict string
	// invalid: the spec is invalid; everything observed is kept as last
	// applied, team-<name> too when it is not there.
	invalid error
	// overReason and overMessage: the TeamSpace is beyond its requester's
	// allowance, or it cannot be read; what exists is kept as it is.
	overReason, overMessage string

	spec Spec
	// all are the units of the spec (units), team-<name> first; answered
	// those nobody else holds, conflicted why each other one is not.
	all, answered []*unit
	conflicted    map[*unit]string
	conflicts     []string
	// unasked are the namespaces no entry asks for any more: removed
	// (confirmed and archived now, with records), pending (confirmed, the
	// archive down: blocked says why) or kept.
	unasked, removed, pending, kept []*unit
	records                         []NamespaceRemoval
	blocked                         error
	// waiting are the adopted namespaces not adopted yet (adopt.go), why
	// each waits; released those no entry adopts any more, whose objects
	// of the TeamSpace's go now.
	waiting  map[*unit]string
	released []*unit
}

// planSync decides a sync: the team namespace held by another, an invalid
// spec, the allowance exceeded, or a valid spec's units with the
// platform's copies, the share held back for the namespaces no entry asks
// for, and which of those go.
func planSync(o *observation, blocked error) *plan {
	p := &plan{o: o}
	if msg, conflict := o.namespaceConflict(o.teamUnit()); conflict {
		p.conflict = msg
		return p
	}
	spec, err := ParseSpec(o.parent.Spec)
	if err == nil {
		if problems := checkNamespaceNames(o.name, spec.Namespaces); len(problems) > 0 {
			err = &SpecError{problems}
		}
	}
	if err != nil {
		p.invalid = err
		return p
	}
	if reason, msg, over := o.overAllowance(spec); over {
		p.overReason, p.overMessage = reason, msg
		return p
	}
	p.spec = spec
	// The namespaces no entry asks for hold their share while they are
	// there (reserve); those whose removal is confirmed go once archived,
	// or wait (pending) with everything in them while the archive is down.
	for _, u := range unaskedUnits(o, teamNamespaces(o.name, spec)) {
		if u.adopted {
			p.released = append(p.released, u)
			continue
		}
		p.unasked = append(p.unasked, u)
	}
	p.all = planUnits(o, spec, p.unasked)
	p.removed, p.records, p.kept = o.splitUnasked(p.unasked)
	if blocked != nil {
		p.pending, p.removed, p.kept, p.records = p.removed, nil, p.unasked, nil
		p.blocked = blocked
	}
	p.conflicted, p.waiting = map[*unit]string{}, map[*unit]string{}
	for _, u := range p.all {
		msg, conflict := o.namespaceConflict(u)
		if u.adopted {
			var state adoptionState
			state, msg = o.adoption(u)
			conflict = state == adoptionHeld
			if state == adoptionMissing || state == adoptionPlanned {
				p.waiting[u] = msg
				continue
			}
		}
		if conflict {
			p.conflicts = append(p.conflicts, msg)
			p.conflicted[u] = msg
			continue
		}
		p.answered = append(p.answered, u)
	}
	return p
}

// planUnits builds the units of a valid spec once, complete, in one
// place: their shares with what the namespaces no entry asks for
// (unasked) hold back and their defaults (units), then the platform's
// copies each gets. Nothing changes them afterwards.
func planUnits(o *observation, spec Spec, unasked []*unit) []*unit {
	var held []corev1.ResourceList
	for _, u := range unasked {
		held = append(held, o.keptHard(u))
	}
	all := units(o.name, spec, held)
	// The platform's templates that select the TeamSpace, copied into
	// each of its namespaces (copies.go); before anything is answered,
	// since they raise team-objects' counts. Without the templates (their
	// bundle missing), each namespace keeps the copies it has, as they
	// are (bundle.go).
	templates, known := o.shownTemplates()
	selected := o.selected(templates)
	for _, u := range all {
		if u.adopted {
			u.types, u.takenNames = o.adoptedTypes(u)
			u.foundQuotas = o.foundQuotas(u)
		}
		if known {
			u.copies, u.taken = unitCopies(selected, u)
		} else {
			u.copies = o.keptTemplates(u)
		}
		u.copiesSeen = o.copiesSeen(u)
	}
	return all
}

// valid reports whether the plan is a valid spec's.
func (p *plan) valid() bool { return p.conflict == "" && p.invalid == nil && p.overReason == "" }

// answered is the answer stage's result: the children, and what the
// readiness and the status need of them.
type answered struct {
	children []map[string]any
	// wanted are the children a valid spec asks for, with the observed
	// ones.
	wanted []wantedChild
	// copies is what status.templates says of the copies.
	copies []TemplateStatus
	// kept names what an invalid spec or the allowance keeps, or says of
	// each namespace kept while no entry asks for it.
	kept []string
}

// answer builds the children of a plan.
func answer(p *plan) *answered {
	o, a := p.o, &answered{children: []map[string]any{}}
	switch {
	case p.conflict != "":
	case p.invalid != nil:
		a.kept = keepChildren(o, a, true)
	case p.overReason != "":
		a.kept = keepChildren(o, a, false)
	default:
		// A template whose selector does not parse first (copied
		// nowhere), then each namespace's copies.
		templates, _ := o.shownTemplates()
		a.copies = invalidTemplates(templates)
		hold := p.holdRaises()
		for _, u := range p.answered {
			o.answerUnit(a, u, u.inside(), hold)
			a.copies = append(a.copies, o.answerCopies(a, u)...)
		}
		o.answerUnit(a, p.answered[0], onceTypes, nil)
		a.kept = o.keepUnasked(a, p.kept)
	}
	return a
}

// respond is the response: the children, the status and when to ask again.
func (p *plan) respond(a *answered, status metav1.ConditionStatus, reason, msg string) *Response {
	o := p.o
	resp := newResponse(o)
	resp.Children = a.children
	resp.ResyncAfterSeconds = ResyncSeconds(o.uid)
	if p.valid() {
		if p.blocked != nil {
			resp.ResyncAfterSeconds = ArchiveRetrySeconds
		}
		resp.Removals = p.records
		resp.Status.Namespaces = o.namespaceStatuses(p.all, p.unasked, p.conflicted, p.waiting, p.removed)
		resp.Status.Templates = a.copies
		if reason == v1alpha1.ReasonCreating {
			// The namespace is named once what it holds is there, not
			// while it is empty: the status stays the same through both
			// syncs.
			resp.Status.Namespace = ""
			for i := range resp.Status.Namespaces {
				resp.Status.Namespaces[i].State = NamespacePending
			}
			resp.Status.Templates = settled(a.copies)
		}
	}
	resp.Status.Conditions = conditions(o, status, reason, msg)
	return resp
}

// answerUnit adds to the answer the children of types that unit u asks
// for, and to its wanted each of them with the observed one. A child inside the namespace is
// answered only once the namespace exists and is not terminating, and a
// type that waits for another (after) only once that one is observed.
// A quota is answered with the raises hold keeps back (raises.go), and
// wanted as the spec asks.
func (o *observation) answerUnit(a *answered, u *unit, types []*childType, hold *raiseHold) {
	_, state := o.namespace(u)
	insideAllowed := state != namespaceMissing && state != namespaceTerminating
	observed, desired, answers := make([]*Object, len(types)), make([]object, len(types)), make([]object, len(types))
	held := make([]bool, len(types))
	quotas := map[string]corev1.ResourceList{}
	for i, t := range types {
		observed[i] = o.child(t, u)
		desired[i] = t.desired(u, observed[i])
		answers[i] = desired[i]
		if q, ok := desired[i].(*corev1.ResourceQuota); ok {
			if hold != nil {
				q = q.DeepCopy()
				q.Spec.Hard, held[i] = hold.held(o, t, u, q.Spec.Hard)
				answers[i] = q
			}
			if !o.asChild(t) {
				quotas[t.name(u)] = q.Spec.Hard
			}
		}
	}
	for i, t := range types {
		obj, ob := desired[i], observed[i]
		if obj == nil {
			continue
		}
		if o.carries(t) {
			// The LimitRange carries the quotas of its namespace: the
			// DecoratorController makes them as soon as it exists.
			obj.SetAnnotations(withQuotas(obj.GetAnnotations(), quotas))
		}
		ans, strangers := t.strangersOf(t.answer(answers[i]), answers[i], ob)
		a.wanted = append(a.wanted, wantedChild{t, u, obj, ob, strangers, held[i]})
		if !o.asChild(t) {
			continue
		}
		if (!t.namespaced || insideAllowed) && (t.after == nil || o.child(t.after, u) != nil) {
			a.children = append(a.children, ans)
		}
	}
}

// withQuotas is a carrier's annotations with the quotas its namespace
// holds (QuotasAnnotation, quotas.go).
func withQuotas(annotations map[string]string, quotas map[string]corev1.ResourceList) map[string]string {
	out := maps.Clone(annotations)
	if out == nil {
		out = map[string]string{}
	}
	out[v1alpha1.QuotasAnnotation] = encodeQuotas(quotas)
	return out
}

// wantedChild is a child a valid spec asks for in a unit, with the
// observed one and the paths of its strangers (strangers.go), which are
// being removed.
type wantedChild struct {
	t         *childType
	u         *unit
	desired   object
	observed  *Object
	strangers []string
	// raiseHeld: answered below desired, a raise waiting for a lowering
	// elsewhere (raises.go).
	raiseHeld bool
}

// compared is what the observed child is compared with: desired, or what
// the type accepts as asked (childType.asked).
func (c wantedChild) compared() object {
	if c.t.asked == nil || c.observed == nil {
		return c.desired
	}
	return c.t.asked(c.u, c.desired, c.observed)
}

// keepChildren answers every observed child as the engine last applied it,
// in each namespace of the TeamSpace the engine shows, so that nothing is
// deleted or weakened, and, with unobserved, what a type keeps without one
// (team-<name> itself). It returns the names of the kept children inside
// the namespaces, for the message.
func keepChildren(o *observation, a *answered, unobserved bool) []string {
	var kept []string
	for i, u := range o.units {
		types := perNamespaceTypes
		if i == 0 {
			types = childTypes
		}
		kept = append(kept, keepUnit(o, a, u, types, unobserved && i == 0)...)
		o.keepCopies(a, u)
	}
	return kept
}

// keepUnit answers a unit's observed children of types as kept (see
// keepChildren) and names those inside its namespace, an extra
// namespace's with it.
func keepUnit(o *observation, a *answered, u *unit, types []*childType, unobserved bool) []string {
	var kept []string
	for _, t := range types {
		ob := o.child(t, u)
		if !o.asChild(t) {
			// Kept with the LimitRange, in its QuotasAnnotation as last
			// applied; named as the quota it is.
			if ob != nil {
				kept = append(kept, keptName(t, u, t.kept(u, ob)))
			}
			continue
		}
		if ob == nil && !unobserved {
			continue
		}
		obj := t.kept(u, ob)
		if obj == nil {
			continue
		}
		a.children = append(a.children, t.answer(obj))
		if ob != nil && t.namespaced {
			kept = append(kept, keptName(t, u, obj))
		}
	}
	return kept
}

// keptName names a kept child inside a unit's namespace, an extra
// namespace's with it.
func keptName(t *childType, u *unit, obj object) string {
	name := t.keptName(u, obj)
	if u.entry != "" {
		name = "in " + u.namespace + " " + name
	}
	return name
}

// unaskedUnits are the observed namespaces of the TeamSpace that none of
// names (teamNamespaces) asks for any more: an entry removed from
// spec.namespaces.
func unaskedUnits(o *observation, names []string) []*unit {
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
	}
	var out []*unit
	for _, u := range o.units {
		if !asked[u.namespace] {
			out = append(out, u)
		}
	}
	return out
}

// keepUnasked keeps each of units (unasked) with everything in it as last
// applied: a namespace holds what a team runs, and it goes only once its
// removal is confirmed (removal.go; its share stays reserved meanwhile:
// reserve). It says which, and how to remove them, of those whose removal
// is not confirmed.
func (o *observation) keepUnasked(a *answered, units []*unit) []string {
	confirmed := confirmedEntries(o.parent)
	var kept []string
	for _, u := range units {
		keepUnit(o, a, u, perNamespaceTypes, false)
		o.keepCopies(a, u)
		if !slices.Contains(confirmed, u.entry) {
			kept = append(kept, fmt.Sprintf("namespace %s is no longer in spec.namespaces; it is kept with everything in it, its share held back from team-%s, until its removal is confirmed: annotation %s listing %s",
				u.namespace, u.teamspace, v1alpha1.RemoveNamespacesAnnotation, u.entry))
		}
	}
	return kept
}

// readyMessage summarises a Ready TeamSpace: each child type's part, for
// team-<name> and then each extra namespace.
func readyMessage(answered []*unit) string {
	var b strings.Builder
	for i, u := range answered {
		types := perNamespaceTypes
		switch {
		case i == 0:
			types = childTypes
		case u.adopted:
			b.WriteString("; ")
			fmt.Fprintf(&b, "namespace %s is adopted (pod security %s %s)", u.namespace, u.spec.PodSecurity, adoptedLevel(u))
			types = u.types
		default:
			b.WriteString("; ")
		}
		for _, t := range types {
			b.WriteString(t.ready(u))
		}
	}
	return b.String()
}

// sortedKeys are the keys of observed children of one type, sorted.
func sortedKeys(objs ObjectMap) []string {
	keys := make([]string, 0, len(objs))
	for key := range objs {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
