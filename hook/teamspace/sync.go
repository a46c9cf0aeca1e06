package teamspace

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sync computes the desired children and status of a TeamSpace from what the
// engine observed. The request must have passed Validate.
//
// The children inside the namespace are asked for only once the namespace
// exists and is not terminating: creating them earlier fails and costs a
// retry with backoff. An invalid spec never removes or weakens what exists:
// every child the engine last applied is answered again until the spec is
// fixed.
func Sync(r *Request) *Response {
	name := r.Parent.Metadata.Name
	resp := newResponse(r)
	resp.ResyncAfterSeconds = ResyncSeconds(string(r.Parent.Metadata.UID))

	if msg, conflict := r.namespaceConflict(); conflict {
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceConflict, msg)
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

	state := r.namespaceState()
	insideAllowed := state != namespaceMissing && state != namespaceTerminating
	var wanted []wantedChild
	for _, t := range childTypes {
		o := r.observed(t)
		obj := t.desired(name, spec, o)
		if obj == nil {
			continue
		}
		answer, strangers := t.strangersOf(t.answer(obj), obj, o)
		wanted = append(wanted, wantedChild{t, obj, o, strangers})
		if (!t.namespaced || insideAllowed) && (t.after == nil || r.observed(t.after) != nil) {
			resp.Children = append(resp.Children, answer)
		}
	}
	if msg, creating := r.creating(wanted); creating {
		// The namespace is named once what it holds is there, not while
		// it is empty: the status stays the same through both syncs.
		resp.Status.Namespace = ""
		resp.setReady(r, metav1.ConditionFalse, ReasonCreating, msg)
		return resp
	}
	if reason, msg, notReady := r.namespaceNotReady(); notReady {
		resp.setReady(r, metav1.ConditionFalse, reason, msg)
		return resp
	}
	if msg, conflict := r.ownerRoleConflict(spec); conflict {
		resp.setReady(r, metav1.ConditionFalse, ReasonClusterRoleConflict, msg)
		return resp
	}
	if reason, problems := r.childProblems(spec, wanted); len(problems) > 0 {
		resp.setReady(r, metav1.ConditionFalse, reason, strings.Join(problems, "; "))
		return resp
	}
	if len(spec.ReservedOwners) > 0 {
		resp.setReady(r, metav1.ConditionFalse, ReasonOwnerReserved, fmt.Sprintf(
			"not bound, reserved: %s; everything else is as asked: %s", strings.Join(spec.ReservedOwners, "; "), readyMessage(name, spec)))
		return resp
	}
	resp.setReady(r, metav1.ConditionTrue, ReasonReady, readyMessage(name, spec))
	return resp
}

// creating says what a TeamSpace is creating when its namespace is missing,
// or Active and as desired, and none of the children inside it exist. A new
// TeamSpace is in that state for its first two syncs, before the engine has
// created its namespace and once it has; both answer this one status, so
// that the engine writes it once, not twice (BENCHMARKS.md §5). The
// message depends on the spec only, for the same reason.
func (r *Request) creating(wanted []wantedChild) (string, bool) {
	if s := r.namespaceState(); s != namespaceMissing && s != namespaceActive {
		return "", false
	}
	name := r.Parent.Metadata.Name
	var inside []string
	for _, c := range wanted {
		switch {
		case c.t == namespaceType && c.observed != nil && !c.t.matches(c.desired, c.observed):
			return "", false // NamespaceOutOfDate says which labels differ
		case !c.t.namespaced:
		case c.observed != nil:
			return "", false
		default:
			inside = append(inside, c.t.kind+" "+c.t.name(name))
		}
	}
	return fmt.Sprintf("creating namespace %s and in it %s; if this lasts, the engine's error is in the TeamSpace's events (kubectl describe teamspace %s)",
		NamespaceName(name), strings.Join(inside, ", "), name), true
}

// wantedChild is a child a valid spec asks for, with the observed one and
// the paths of its strangers (strangers.go), which are being removed.
type wantedChild struct {
	t         *childType
	desired   object
	observed  *Object
	strangers []string
}

// childProblems names every child that is pending, out of date or still to
// be deleted, in registry order; the reason is the first one's.
func (r *Request) childProblems(spec Spec, wanted []wantedChild) (string, []string) {
	var reason string
	var problems []string
	add := func(rsn, msg string) {
		if reason == "" {
			reason = rsn
		}
		problems = append(problems, msg)
	}
	asked := map[*childType]bool{}
	for _, c := range wanted {
		asked[c.t] = true
		ref := c.t.ref(r.Parent.Metadata.Name)
		switch {
		case len(c.strangers) > 0:
			add(c.t.outOfDateReason, fmt.Sprintf("%s %s has what the spec does not set at %s; removing it", c.t.kind, ref, strings.Join(c.strangers, ", ")))
		case c.observed == nil:
			add(c.t.pendingReason, c.t.pendingMessage(ref, c.desired))
		case !c.t.matches(c.desired, c.observed):
			add(c.t.outOfDateReason, c.t.outOfDateMessageFor(ref, c.observed, c.desired))
		}
	}
	for _, t := range childTypes {
		if !t.optional || asked[t] {
			continue
		}
		// By name: team-quota and team-objects share a type key.
		if r.observed(t) != nil {
			add(ReasonChildRemoving, fmt.Sprintf("%s %s is no longer asked for, deleting it", t.kind, t.ref(r.Parent.Metadata.Name)))
		}
	}
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
	resp.setReady(r, metav1.ConditionFalse, ReasonInvalidSpec, msg)
	return resp
}

// keepChildren answers every observed child as the engine last applied it,
// so that nothing is deleted or weakened, and, with unobserved, what a type
// keeps without one (the namespace). It returns the names of the kept
// children inside the namespace, for the message.
func keepChildren(r *Request, resp *Response, unobserved bool) []string {
	name := r.Parent.Metadata.Name
	var kept []string
	for _, t := range childTypes {
		o := r.observed(t)
		if o == nil && !unobserved {
			continue
		}
		obj := t.kept(name, o)
		if obj == nil {
			continue
		}
		resp.Children = append(resp.Children, t.answer(obj))
		if o != nil && t.namespaced {
			kept = append(kept, t.keptName(name, obj))
		}
	}
	return kept
}

// readyMessage summarises a Ready TeamSpace: each child type's part.
func readyMessage(teamspace string, spec Spec) string {
	var b strings.Builder
	for _, t := range childTypes {
		b.WriteString(t.ready(teamspace, spec))
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
