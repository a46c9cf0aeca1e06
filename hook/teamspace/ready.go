package teamspace

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// readyChecks are the Ready reasons of a sync in the order they win, the
// one place that order is written: the first check that holds gives
// Ready's reason and message (False); when none holds the TeamSpace is
// Ready. First what decides the whole answer (someone else's namespace, the
// spec, the allowance), then what is being made (a new TeamSpace, its
// namespaces, the owners' role, each child as the registry orders them),
// and last what waits for a person while everything else is as asked.
var readyChecks = []readyCheck{
	teamNamespaceTaken, // NamespaceConflict
	specInvalid,        // InvalidSpec
	beyondAllowance,    // RequesterAllowanceExceeded, LimitsInvalid
	creating,           // Creating
	namespacesNotReady, // NamespacePending, NamespaceTerminating, NamespaceNotActive
	ownerRoleTaken,     // ClusterRoleConflict
	childrenNotAsAsked, // each child type's Pending and OutOfDate, ChildRemoving
	adoptedNotLabelled, // NamespaceOutOfDate
	heldForAPerson,     // NamespaceConflict, ArchivePending, NamespaceKept, NamespaceRemoving, OwnerReserved
}

// readyCheck says whether a reason holds for a plan and its answer, and
// the message.
type readyCheck func(p *plan, a *answered) (reason, message string, holds bool)

// readiness is the Ready condition's status, reason and message.
func readiness(p *plan, a *answered) (metav1.ConditionStatus, string, string) {
	for _, check := range readyChecks {
		if reason, msg, holds := check(p, a); holds {
			return metav1.ConditionFalse, reason, msg
		}
	}
	return metav1.ConditionTrue, v1alpha1.ReasonReady, readyMessage(p.answered)
}

// teamNamespaceTaken: team-<name> exists and is someone else's (it is
// never adopted); nothing is answered.
func teamNamespaceTaken(p *plan, _ *answered) (string, string, bool) {
	return v1alpha1.ReasonNamespaceConflict, p.conflict, p.conflict != ""
}

// specInvalid: a spec that bypassed validation; every observed child is
// kept as last applied, nothing new is made.
func specInvalid(p *plan, a *answered) (string, string, bool) {
	if p.invalid == nil {
		return "", "", false
	}
	msg := fmt.Sprintf("invalid spec: %v; no quota is created until it is fixed", p.invalid)
	if len(a.kept) > 0 {
		msg = fmt.Sprintf("invalid spec: %v; keeping %s until it is fixed", p.invalid, strings.Join(a.kept, ", "))
	}
	return v1alpha1.ReasonInvalidSpec, msg, true
}

// beyondAllowance: the TeamSpace does not fit its requester's allowance,
// or the allowance cannot be read; what it already has is kept as it is,
// nothing new is created.
func beyondAllowance(p *plan, a *answered) (string, string, bool) {
	if p.overReason == "" {
		return "", "", false
	}
	msg := p.overMessage
	switch {
	case p.o.teamNamespace() != nil:
		msg += fmt.Sprintf("; keeping what it has as it is: %s", strings.Join(append([]string{"namespace " + NamespaceName(p.o.name)}, a.kept...), ", "))
	case p.overReason == v1alpha1.ReasonAllowanceExceeded:
		msg += "; no namespace until one of them is deleted or the platform raises the allowance"
	}
	return p.overReason, msg, true
}

// creating says what a TeamSpace is creating when each of its namespaces
// is missing, or Active and as desired, and none of the children inside
// them exist. A new TeamSpace is in that state for its first two syncs,
// before the engine has created its namespaces and once it has; both
// answer this one status, so that the engine writes it once, not twice
// (docs/design/creating-once.md). The message depends on the spec only,
// for the same reason.
func creating(p *plan, a *answered) (string, string, bool) {
	for _, u := range p.answered {
		if _, s := p.o.namespace(u); s != namespaceMissing && s != namespaceActive {
			return "", "", false
		}
	}
	inside := map[*unit][]string{}
	for _, c := range a.wanted {
		switch {
		case c.t == namespaceType && c.observed != nil && !c.t.matches(c.desired, c.observed):
			return "", "", false // NamespaceOutOfDate says which labels differ
		case !c.t.namespaced:
		case c.observed != nil:
			return "", "", false
		default:
			inside[c.u] = append(inside[c.u], c.t.kind+" "+c.t.name(c.u))
		}
	}
	var parts []string
	for _, u := range p.answered {
		what := "namespace %s and in it %s"
		if u.adopted {
			what = "in adopted namespace %s %s"
		}
		parts = append(parts, fmt.Sprintf(what, u.namespace, strings.Join(inside[u], ", ")))
	}
	return v1alpha1.ReasonCreating, fmt.Sprintf("creating %s; if this lasts, the engine's error is in the TeamSpace's events (kubectl describe teamspace %s)",
		strings.Join(parts, "; "), p.o.name), true
}

// namespacesNotReady says why the TeamSpace cannot be Ready for the first
// of its namespaces that is missing, terminating or not Active.
func namespacesNotReady(p *plan, _ *answered) (string, string, bool) {
	for _, u := range p.answered {
		ns, state := p.o.namespace(u)
		switch state {
		case namespaceMissing:
			// The hook cannot see why a create fails (the engine writes
			// this status after a failed child write, without the error),
			// but the engine records the error as a SyncError event on
			// the TeamSpace: say where to look, e.g. for a create refused
			// by the reserved team- prefix (namespaces.yaml) when the
			// engine lacks its grant.
			return v1alpha1.ReasonNamespacePending, fmt.Sprintf(
				"waiting for namespace %s to be created; if this lasts, the engine's error is in the TeamSpace's events (kubectl describe teamspace %s)", u.namespace, p.o.name), true
		case namespaceTerminating:
			return v1alpha1.ReasonNamespaceTerminating, fmt.Sprintf("namespace %s is terminating; it is created again once it is gone", u.namespace), true
		case namespaceNotActive:
			return v1alpha1.ReasonNamespaceNotActive, fmt.Sprintf("namespace %s is in phase %q, want Active", u.namespace, ns.Status.Phase), true
		}
	}
	return "", "", false
}

// ownerRoleTaken says who holds ClusterRole teamspace-owner-<name> when
// the spec lists owners and the engine shows that role only as a related
// object (the customize hook asks for it by name), not as the TeamSpace's
// child: someone else made it. The engine never adopts it and the binding
// waits for the TeamSpace's own role (ownerBindingType.after), so the
// owners hold nothing through it; this says so instead of waiting in
// silence.
func ownerRoleTaken(p *plan, _ *answered) (string, string, bool) {
	if len(p.spec.Owners) == 0 {
		return "", "", false
	}
	foreign, holder := p.o.foreign(ownerRoleType, p.o.teamUnit())
	if foreign == nil {
		return "", "", false
	}
	return v1alpha1.ReasonClusterRoleConflict, fmt.Sprintf("ClusterRole %s already exists and %s; its owners are bound to nothing until it is deleted (it is never adopted, nor bound)",
		foreign.Metadata.Name, holder), true
}

// childrenNotAsAsked names every child that is pending, out of date or
// still to be deleted, by unit in registry order; the reason is the first
// one's.
func childrenNotAsAsked(p *plan, a *answered) (string, string, bool) {
	o := p.o
	var reason string
	var problems []string
	add := func(rsn, msg string) {
		if reason == "" {
			reason = rsn
		}
		problems = append(problems, msg)
	}
	asked := map[string]bool{}
	for _, c := range a.wanted {
		ref := c.t.ref(c.u)
		asked[c.t.key+" "+ref] = true
		switch {
		case len(c.strangers) > 0:
			add(c.t.outOfDateReason, fmt.Sprintf("%s %s has what the spec does not set at %s; removing it", c.t.kind, ref, strings.Join(c.strangers, ", ")))
		case c.observed == nil:
			add(c.t.pendingReason, c.t.pendingMessage(ref, c.desired)+o.madeBy(c.t, c.u))
		case !c.t.matches(c.compared(), c.observed):
			msg := c.t.outOfDateMessageFor(ref, c.observed, c.desired)
			if c.raiseHeld {
				msg += " once the quotas it is taken from are lowered, in the team's other namespaces or with a namespace removed (raised first, the team's quotas would add up to more than its totals)"
			}
			add(c.t.outOfDateReason, msg)
		}
	}
	removing := func(u *unit, types []*childType) {
		for _, t := range types {
			// By name: team-quota and team-objects share a type key.
			if t.optional && !asked[t.key+" "+t.ref(u)] && o.child(t, u) != nil {
				add(v1alpha1.ReasonChildRemoving, fmt.Sprintf("%s %s is no longer asked for, deleting it", t.kind, t.ref(u)))
			}
		}
	}
	for _, u := range p.answered {
		removing(u, perNamespaceTypes)
	}
	removing(p.answered[0], onceTypes)
	return reason, strings.Join(problems, "; "), len(problems) > 0
}

// adoptedNotLabelled: an adopted namespace whose labels (the TeamSpace
// label, Pod Security) DecoratorController teamspace-adopted has not set
// yet.
func adoptedNotLabelled(p *plan, _ *answered) (string, string, bool) {
	pending := p.o.labelsPending(p.answered)
	return v1alpha1.ReasonNamespaceOutOfDate, strings.Join(pending, "; "), len(pending) > 0
}

// heldForAPerson: what a person must act on, after everything that is
// being made, in this order; the rest is as asked.
func heldForAPerson(p *plan, a *answered) (string, string, bool) {
	var reason string
	var held []string
	hold := func(rsn string, what ...string) {
		if len(what) > 0 && reason == "" {
			reason = rsn
		}
		held = append(held, what...)
	}
	hold(v1alpha1.ReasonNamespaceConflict, p.conflicts...)
	for _, u := range p.all {
		if msg := p.waiting[u]; msg != "" {
			hold(v1alpha1.ReasonAdoptionPlanned, msg)
		}
	}
	hold(v1alpha1.ReasonArchivePending, removingMessages(p.pending, p.blocked)...)
	hold(v1alpha1.ReasonNamespaceKept, a.kept...)
	hold(v1alpha1.ReasonNamespaceRemoving, removingMessages(p.removed, nil)...)
	if len(p.spec.ReservedOwners) > 0 {
		hold(v1alpha1.ReasonOwnerReserved, "not bound, reserved: "+strings.Join(p.spec.ReservedOwners, "; "))
	}
	if reason == "" {
		return "", "", false
	}
	return reason, fmt.Sprintf("%s; everything else is as asked: %s", strings.Join(held, "; "), readyMessage(p.answered)), true
}

// finalizeReadiness is the Ready condition of a TeamSpace being deleted:
// its archive record not stored yet (ArchivePending), else Deleting, done
// or waiting for the children it names.
func finalizeReadiness(o *observation, record string, blocked error) (reason, message string) {
	switch {
	case blocked != nil:
		return v1alpha1.ReasonArchivePending, fmt.Sprintf("deletion waits for the archive record: %v; nothing is deleted until it is stored (retrying every %d s)", blocked, ArchiveRetrySeconds)
	case !o.hasChildren():
		return v1alpha1.ReasonDeleting, fmt.Sprintf("archived as %s; all children are deleted", record)
	}
	return v1alpha1.ReasonDeleting, fmt.Sprintf("archived as %s; waiting for %s to be deleted", record, strings.Join(o.remainingChildren(), ", "))
}
