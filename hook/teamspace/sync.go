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

func syncWith(r *Request, blocked error) *Response {
	name := r.Parent.Metadata.Name
	resp := newResponse(r)
	resp.ResyncAfterSeconds = ResyncSeconds(string(r.Parent.Metadata.UID))

	if msg, conflict := r.namespaceConflict(r.teamUnit()); conflict {
		resp.setReady(r, metav1.ConditionFalse, v1alpha1.ReasonNamespaceConflict, msg)
		return resp
	}
	spec, err := ParseSpec(r.Parent.Spec)
	if err == nil {
		if problems := checkNamespaceNames(name, spec.Namespaces); len(problems) > 0 {
			err = &SpecError{problems}
		}
	}
	if err != nil {
		return syncInvalid(r, resp, err)
	}
	if reason, msg, over := r.overAllowance(spec); over {
		return syncOverAllowance(r, resp, reason, msg)
	}

	// Each namespace of the team, then what the TeamSpace has once. An
	// extra namespace someone else holds gets nothing of the team's.
	var answered []*unit
	var wanted []wantedChild
	var conflicts []string
	conflicted := map[*unit]string{}
	all := units(name, spec)
	// The platform's templates that select the TeamSpace, copied into
	// each of its namespaces (copies.go); before anything is answered,
	// since they raise team-objects' counts.
	// Without the templates (their bundle missing), each namespace keeps
	// the copies it has, as they are (bundle.go).
	templates, known := r.bundleTemplates()
	selected := r.selected(templates)
	for _, u := range all {
		if known {
			u.copies, u.taken = unitCopies(selected, u)
		} else {
			u.copies = r.keptTemplates(u)
		}
		u.copiesSeen = r.copiesSeen(u)
	}
	copyStatus := invalidTemplates(templates)
	// The namespaces no entry asks for hold their share while they are
	// there; those whose removal is confirmed go once archived, or wait
	// (pending) with everything in them while the archive is down.
	unasked := r.unaskedUnits(all)
	r.reserve(all[0], unasked, spec)
	removed, records, keptUnits := r.splitUnasked(unasked)
	var pending []*unit
	if blocked != nil {
		pending, removed, keptUnits = removed, nil, unasked
		resp.ResyncAfterSeconds = ArchiveRetrySeconds
	} else {
		resp.Removals = records
	}
	for _, u := range all {
		if msg, conflict := r.namespaceConflict(u); conflict {
			conflicts = append(conflicts, msg)
			conflicted[u] = msg
			continue
		}
		answered = append(answered, u)
		wanted = r.answerUnit(resp, u, perNamespaceTypes, wanted)
		copyStatus = append(copyStatus, r.answerCopies(resp, u)...)
	}
	wanted = r.answerUnit(resp, answered[0], onceTypes, wanted)
	resp.Status.Namespaces = r.namespaceStatuses(all, unasked, conflicted, removed)
	kept := r.keepUnasked(resp, keptUnits)

	resp.Status.Templates = copyStatus
	if msg, creating := r.creating(answered, wanted); creating {
		// The namespace is named once what it holds is there, not while
		// it is empty: the status stays the same through both syncs.
		resp.Status.Namespace = ""
		for i := range resp.Status.Namespaces {
			resp.Status.Namespaces[i].State = NamespacePending
		}
		resp.Status.Templates = settled(copyStatus)
		resp.setReady(r, metav1.ConditionFalse, v1alpha1.ReasonCreating, msg)
		return resp
	}
	for _, u := range answered {
		if reason, msg, notReady := r.namespaceNotReady(u); notReady {
			resp.setReady(r, metav1.ConditionFalse, reason, msg)
			return resp
		}
	}
	if msg, conflict := r.ownerRoleConflict(spec); conflict {
		resp.setReady(r, metav1.ConditionFalse, v1alpha1.ReasonClusterRoleConflict, msg)
		return resp
	}
	if reason, problems := r.childProblems(answered, wanted); len(problems) > 0 {
		resp.setReady(r, metav1.ConditionFalse, reason, strings.Join(problems, "; "))
		return resp
	}
	// What a person must act on, after everything that is being made:
	// the rest is as asked.
	var reason string
	var held []string
	hold := func(rsn string, what ...string) {
		if len(what) > 0 && reason == "" {
			reason = rsn
		}
		held = append(held, what...)
	}
	hold(v1alpha1.ReasonNamespaceConflict, conflicts...)
	hold(v1alpha1.ReasonArchivePending, removingMessages(pending, blocked)...)
	hold(v1alpha1.ReasonNamespaceKept, kept...)
	hold(v1alpha1.ReasonNamespaceRemoving, removingMessages(removed, nil)...)
	if len(spec.ReservedOwners) > 0 {
		hold(v1alpha1.ReasonOwnerReserved, "not bound, reserved: "+strings.Join(spec.ReservedOwners, "; "))
	}
	if reason != "" {
		resp.setReady(r, metav1.ConditionFalse, reason, fmt.Sprintf(
			"%s; everything else is as asked: %s", strings.Join(held, "; "), readyMessage(answered)))
		return resp
	}
	resp.setReady(r, metav1.ConditionTrue, v1alpha1.ReasonReady, readyMessage(answered))
	return resp
}

// answerUnit adds to the answer the children of types that unit u asks
// for and returns wanted with them added. A child inside the namespace is
// answered only once the namespace exists and is not terminating, and a
// type that waits for another (after) only once that one is observed.
func (r *Request) answerUnit(resp *Response, u *unit, types []*childType, wanted []wantedChild) []wantedChild {
	state := r.namespaceState(u)
	insideAllowed := state != namespaceMissing && state != namespaceTerminating
	viaDecorator := r.quotasViaDecorator()
	observed, desired := make([]*Object, len(types)), make([]object, len(types))
	quotas := map[string]corev1.ResourceList{}
	for i, t := range types {
		observed[i] = r.observed(t, u)
		desired[i] = t.desired(u, observed[i])
		if q, ok := desired[i].(*corev1.ResourceQuota); ok && t.viaDecorator && viaDecorator {
			quotas[t.name(u)] = q.Spec.Hard
		}
	}
	for i, t := range types {
		obj, o := desired[i], observed[i]
		if obj == nil {
			continue
		}
		if t == quotasCarrier && viaDecorator {
			// The LimitRange carries the quotas of its namespace: the
			// DecoratorController makes them as soon as it exists.
			obj.SetAnnotations(withQuotas(obj.GetAnnotations(), quotas))
		}
		answer, strangers := t.strangersOf(t.answer(obj), obj, o)
		wanted = append(wanted, wantedChild{t, u, obj, o, strangers})
		if t.viaDecorator && viaDecorator {
			continue
		}
		if (!t.namespaced || insideAllowed) && (t.after == nil || r.observed(t.after, u) != nil) {
			resp.Children = append(resp.Children, answer)
		}
	}
	return wanted
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

// creating says what a TeamSpace is creating when each of its namespaces
// is missing, or Active and as desired, and none of the children inside
// them exist. A new TeamSpace is in that state for its first two syncs,
// before the engine has created its namespaces and once it has; both
// answer this one status, so that the engine writes it once, not twice
// (BENCHMARKS.md §5). The message depends on the spec only, for the same
// reason.
func (r *Request) creating(answered []*unit, wanted []wantedChild) (string, bool) {
	for _, u := range answered {
		if s := r.namespaceState(u); s != namespaceMissing && s != namespaceActive {
			return "", false
		}
	}
	inside := map[*unit][]string{}
	for _, c := range wanted {
		switch {
		case c.t == namespaceType && c.observed != nil && !c.t.matches(c.desired, c.observed):
			return "", false // NamespaceOutOfDate says which labels differ
		case !c.t.namespaced:
		case c.observed != nil:
			return "", false
		default:
			inside[c.u] = append(inside[c.u], c.t.kind+" "+c.t.name(c.u))
		}
	}
	var parts []string
	for _, u := range answered {
		parts = append(parts, fmt.Sprintf("namespace %s and in it %s", u.namespace, strings.Join(inside[u], ", ")))
	}
	name := r.Parent.Metadata.Name
	return fmt.Sprintf("creating %s; if this lasts, the engine's error is in the TeamSpace's events (kubectl describe teamspace %s)",
		strings.Join(parts, "; "), name), true
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
}

// compared is what the observed child is compared with: desired, or what
// the type accepts as asked (childType.asked).
func (c wantedChild) compared() object {
	if c.t.asked == nil || c.observed == nil {
		return c.desired
	}
	return c.t.asked(c.u, c.desired, c.observed)
}

// childProblems names every child that is pending, out of date or still to
// be deleted, by unit in registry order; the reason is the first one's.
func (r *Request) childProblems(answered []*unit, wanted []wantedChild) (string, []string) {
	var reason string
	var problems []string
	add := func(rsn, msg string) {
		if reason == "" {
			reason = rsn
		}
		problems = append(problems, msg)
	}
	asked := map[string]bool{}
	for _, c := range wanted {
		ref := c.t.ref(c.u)
		asked[c.t.key+" "+ref] = true
		switch {
		case len(c.strangers) > 0:
			add(c.t.outOfDateReason, fmt.Sprintf("%s %s has what the spec does not set at %s; removing it", c.t.kind, ref, strings.Join(c.strangers, ", ")))
		case c.observed == nil:
			msg := c.t.pendingMessage(ref, c.desired)
			if c.t.viaDecorator && r.quotasViaDecorator() {
				msg += " by DecoratorController " + QuotasControllerName
			}
			add(c.t.pendingReason, msg)
		case !c.t.matches(c.compared(), c.observed):
			add(c.t.outOfDateReason, c.t.outOfDateMessageFor(ref, c.observed, c.desired))
		}
	}
	removing := func(u *unit, types []*childType) {
		for _, t := range types {
			// By name: team-quota and team-objects share a type key.
			if t.optional && !asked[t.key+" "+t.ref(u)] && r.observed(t, u) != nil {
				add(v1alpha1.ReasonChildRemoving, fmt.Sprintf("%s %s is no longer asked for, deleting it", t.kind, t.ref(u)))
			}
		}
	}
	for _, u := range answered {
		removing(u, perNamespaceTypes)
	}
	removing(answered[0], onceTypes)
	return reason, problems
}

// syncInvalid answers a spec that bypassed validation: every observed child
// as last applied, nothing new, and InvalidSpec naming each field.
func syncInvalid(r *Request, resp *Response, err error) *Response {
	kept := keepChildren(r, resp, true)
	msg := fmt.Sprintf("invalid spec: %v; no quota is created until it is fixed", err)
	if len(kept) > 0 {
		msg = fmt.Sprintf("invalid spec: %v; keeping %s until it is fixed", err, strings.Join(kept, ", "))
	}
	resp.setReady(r, metav1.ConditionFalse, v1alpha1.ReasonInvalidSpec, msg)
	return resp
}

// keepChildren answers every observed child as the engine last applied it,
// in each namespace of the TeamSpace the engine shows, so that nothing is
// deleted or weakened, and, with unobserved, what a type keeps without one
// (team-<name> itself). It returns the names of the kept children inside
// the namespaces, for the message.
func keepChildren(r *Request, resp *Response, unobserved bool) []string {
	var kept []string
	for i, u := range r.observedUnits() {
		types := perNamespaceTypes
		if i == 0 {
			types = childTypes
		}
		kept = append(kept, keepUnit(r, resp, u, types, unobserved && i == 0)...)
		r.keepCopies(resp, u)
	}
	return kept
}

// keepUnit answers a unit's observed children of types as kept (see
// keepChildren) and names those inside its namespace, an extra
// namespace's with it.
func keepUnit(r *Request, resp *Response, u *unit, types []*childType, unobserved bool) []string {
	var kept []string
	for _, t := range types {
		o := r.observed(t, u)
		if t.viaDecorator && r.quotasViaDecorator() {
			// Kept with the LimitRange, in its QuotasAnnotation as last
			// applied; named as the quota it is.
			if o != nil {
				kept = append(kept, keptName(t, u, t.kept(u, o)))
			}
			continue
		}
		if o == nil && !unobserved {
			continue
		}
		obj := t.kept(u, o)
		if obj == nil {
			continue
		}
		resp.Children = append(resp.Children, t.answer(obj))
		if o != nil && t.namespaced {
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

// unaskedUnits are the observed namespaces of the TeamSpace that no unit
// of all asks for any more: an entry removed from spec.namespaces.
func (r *Request) unaskedUnits(all []*unit) []*unit {
	asked := map[string]bool{}
	for _, u := range all {
		asked[u.namespace] = true
	}
	var out []*unit
	for _, u := range r.observedUnits() {
		if !asked[u.namespace] {
			out = append(out, u)
		}
	}
	return out
}

// keepUnasked keeps each of units (unasked, sync.go) with everything in
// it as last applied: a namespace holds what a team runs, and it goes only
// once its removal is confirmed (removal.go; its share stays reserved
// meanwhile: reserve). It says which, and how to remove them, of those
// whose removal is not confirmed.
func (r *Request) keepUnasked(resp *Response, units []*unit) []string {
	confirmed := r.confirmedEntries()
	var kept []string
	for _, u := range units {
		keepUnit(r, resp, u, perNamespaceTypes, false)
		r.keepCopies(resp, u)
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
		if i == 0 {
			types = childTypes
		} else {
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
