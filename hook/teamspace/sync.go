package teamspace

import (
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Sync computes the desired children and status of a TeamSpace from what the
// engine observed. The request must have passed Validate.
//
// The children inside the namespace (quota, LimitRange, RoleBinding,
// NetworkPolicy) are asked for only once the namespace exists and is not
// terminating: creating them earlier fails and costs a retry with backoff.
// An invalid spec never removes or weakens what exists: every child the
// engine last applied is answered again until the spec is fixed.
func Sync(r *Request) *Response {
	name := r.Parent.Metadata.Name
	nsName := NamespaceName(name)
	ns := r.observedNamespace()
	resp := newResponse(r)
	resp.ResyncAfterSeconds = ResyncSeconds(string(r.Parent.Metadata.UID))

	if ns == nil {
		if foreign := r.relatedNamespace(); foreign != nil && !ownedBy(foreign, string(r.Parent.Metadata.UID)) {
			resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceConflict, conflictMessage(nsName, foreign))
			return resp
		}
	}

	spec, err := ParseSpec(r.Parent.Spec)
	if err != nil {
		return syncInvalid(r, resp, err)
	}

	desiredNS := desiredNamespace(name, spec.PodSecurity)
	resp.Children = append(resp.Children, desiredNS)
	inside, strangers := desiredInside(name, spec, r.observedInNamespace(RoleBindingGroup, RoleBindingName))
	if ns != nil && !isTerminating(ns) {
		for _, c := range inside {
			resp.Children = append(resp.Children, c.obj)
		}
	}
	switch {
	case ns == nil:
		// The hook cannot see why a create fails (the engine writes this
		// status after a failed child write, without the error), but the
		// engine records the error as a SyncError event on the TeamSpace:
		// say where to look, e.g. for a create refused by the reserved
		// team- prefix (namespaces.yaml) when the engine lacks its grant.
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespacePending, fmt.Sprintf(
			"waiting for namespace %s to be created; if this lasts, the engine's error is in the TeamSpace's events (kubectl describe teamspace %s)", nsName, name))
	case isTerminating(ns):
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceTerminating, fmt.Sprintf("namespace %s is terminating; it is created again once it is gone", nsName))
	case ns.Status.Phase != "Active":
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceNotActive, fmt.Sprintf("namespace %s is in phase %q, want Active", nsName, ns.Status.Phase))
	default:
		reason, problems := r.childProblems(desiredNS, inside, strangers)
		if len(problems) > 0 {
			resp.setReady(r, metav1.ConditionFalse, reason, strings.Join(problems, "; "))
			return resp
		}
		resp.setReady(r, metav1.ConditionTrue, ReasonReady, readyMessage(nsName, spec))
	}
	return resp
}

// child is a desired child inside the team namespace; hard is the quota's
// limits (quota only).
type child struct {
	group, name string
	obj         *unstructured.Unstructured
	hard        map[string]string
}

// desiredInside lists the children inside the namespace a valid spec asks
// for, in the order the status reports them, and the RoleBinding subjects
// added by hand that are being removed (see strangerSubjects).
func desiredInside(name string, spec Spec, observedRB *Object) ([]child, []string) {
	out := []child{
		{group: QuotaGroup, name: QuotaName, obj: desiredQuota(name, specHard(spec)), hard: specHard(spec)},
		{group: LimitRangeGroup, name: LimitRangeName, obj: desiredLimitRange(name, spec)},
	}
	var strangers []string
	if len(spec.Owners) > 0 {
		var subjects []any
		subjects, strangers = strangerSubjects(ownerSubjects(spec.Owners), observedRB)
		out = append(out, child{group: RoleBindingGroup, name: RoleBindingName, obj: roleBindingWith(name, subjects)})
	}
	if spec.NetworkIsolation {
		out = append(out, child{group: NetworkPolicyGroup, name: NetworkPolicyName, obj: desiredNetworkPolicy(name)})
	}
	return out, strangers
}

// childProblems names every child that is pending, out of date or still to
// be deleted; the reason is the first one's.
func (r *Request) childProblems(desiredNS *unstructured.Unstructured, inside []child, strangers []string) (string, []string) {
	var reason string
	var problems []string
	add := func(rsn, msg string) {
		if reason == "" {
			reason = rsn
		}
		problems = append(problems, msg)
	}
	nsName := NamespaceName(r.Parent.Metadata.Name)
	if ns := r.observedNamespace(); !childMatches(NamespaceGroup, desiredNS, ns) {
		add(ReasonNamespaceOutOfDate, fmt.Sprintf("namespace %s has labels %s, updating to %s", nsName, describeLabels(ns.Metadata.Labels), describeLabels(desiredNS.GetLabels())))
	}
	wanted := map[string]bool{}
	for _, c := range inside {
		wanted[c.group] = true
		kind := expectedChildTypes[c.group]
		ref := nsName + "/" + c.name
		o := r.observedInNamespace(c.group, c.name)
		if c.group == QuotaGroup {
			want := c.hard
			switch {
			case o == nil:
				add(ReasonQuotaPending, fmt.Sprintf("waiting for ResourceQuota %s to be created with %s", ref, describeHard(want)))
			case !hardMatches(o.Spec.Hard, want) || hasUnwantedMemory(o.Spec.Hard, want):
				add(ReasonQuotaOutOfDate, fmt.Sprintf("ResourceQuota %s has %s, updating to %s", ref, describeHard(o.Spec.Hard), describeHard(want)))
			}
			continue
		}
		switch {
		case c.group == RoleBindingGroup && len(strangers) > 0:
			add(ReasonRoleBindingOutOfDate, fmt.Sprintf("RoleBinding %s has subjects the spec does not list (%s), removing them", ref, strings.Join(strangers, ", ")))
		case o == nil:
			add(kind+"Pending", fmt.Sprintf("waiting for %s %s to be created", kind, ref))
		case !childMatches(c.group, c.obj, o):
			add(kind+"OutOfDate", fmt.Sprintf("%s %s differs from the spec, updating it", kind, ref))
		}
	}
	for _, group := range childGroups[2:] {
		if wanted[group] {
			continue
		}
		keys := make([]string, 0, len(r.Children[group]))
		for key := range r.Children[group] {
			keys = append(keys, key)
		}
		sort.Strings(keys)
		for _, key := range keys {
			add(ReasonChildRemoving, fmt.Sprintf("%s %s is no longer asked for, deleting it", expectedChildTypes[group], key))
		}
	}
	return reason, problems
}

// syncInvalid answers a spec that bypassed validation: every observed child
// as last applied, nothing new, and InvalidSpec naming each field.
func syncInvalid(r *Request, resp *Response, err error) *Response {
	name := r.Parent.Metadata.Name
	ns := r.observedNamespace()
	resp.Children = append(resp.Children, keptNamespace(name, ns))
	var kept []string
	if quota := r.observedQuota(); quota != nil {
		hard := keptHard(quota)
		resp.Children = append(resp.Children, desiredQuota(name, hard))
		kept = append(kept, "quota "+describeHard(hard))
	}
	for _, c := range []struct{ group, name string }{
		{LimitRangeGroup, LimitRangeName}, {RoleBindingGroup, RoleBindingName}, {NetworkPolicyGroup, NetworkPolicyName},
	} {
		if o := r.observedInNamespace(c.group, c.name); o != nil {
			resp.Children = append(resp.Children, keptChild(name, c.group, c.name, o))
			kept = append(kept, expectedChildTypes[c.group]+" "+c.name)
		}
	}
	msg := fmt.Sprintf("invalid spec: %v; no quota is created until it is fixed", err)
	if len(kept) > 0 {
		msg = fmt.Sprintf("invalid spec: %v; keeping %s until it is fixed", err, strings.Join(kept, ", "))
	}
	resp.setReady(r, metav1.ConditionFalse, ReasonInvalidSpec, msg)
	return resp
}

// readyMessage summarises a Ready TeamSpace.
func readyMessage(nsName string, spec Spec) string {
	req := "cpu=" + spec.DefaultCPU
	if spec.DefaultMemory != "" {
		req += ", memory=" + spec.DefaultMemory
	}
	msg := fmt.Sprintf("namespace %s is Active (pod security %s) with quota %s, default request %s", nsName, spec.PodSecurity, describeHard(specHard(spec)), req)
	if n := len(spec.Owners); n > 0 {
		msg += fmt.Sprintf(", %d owner(s) bound to ClusterRole %s", n, OwnerRole)
	}
	if spec.NetworkIsolation {
		msg += ", ingress only from the namespace"
	}
	return msg
}

// conflictMessage says who holds the namespace the TeamSpace needs.
func conflictMessage(nsName string, foreign *Object) string {
	holder := "was not created for this TeamSpace"
	for _, ref := range foreign.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			holder = fmt.Sprintf("is controlled by %s %s (uid %s)", ref.Kind, ref.Name, ref.UID)
		}
	}
	if isTerminating(foreign) {
		return fmt.Sprintf("namespace %s %s and is still terminating; this TeamSpace gets its namespace once it is gone", nsName, holder)
	}
	return fmt.Sprintf("namespace %s already exists and %s; it is never adopted: delete it, or use another TeamSpace name", nsName, holder)
}

// describeHard prints quota limits in a fixed order for messages;
// requests.memory only when set.
func describeHard(hard map[string]string) string {
	get := func(k string) string {
		if v, ok := hard[k]; ok {
			return v
		}
		return "<unset>"
	}
	s := fmt.Sprintf("pods=%s, requests.cpu=%s", get(hardPods), get(hardCPU))
	if v, ok := hard[hardMemory]; ok {
		s += ", requests.memory=" + v
	}
	return s
}

// describeLabels prints the labels the hook owns on the namespace (the
// TeamSpace label, the enforced Pod Security level and version) in a fixed
// order, so that a hand edit of any of them is named in the status.
func describeLabels(labels map[string]string) string {
	get := func(k string) string {
		if v, ok := labels[k]; ok {
			return v
		}
		return "<unset>"
	}
	return fmt.Sprintf("%s=%s, enforce=%s, enforce-version=%s", TeamSpaceLabel, get(TeamSpaceLabel), get(PodSecurityEnforceLabel), get(PodSecurityEnforceVersionLabel))
}

// hasUnwantedMemory: requests.memory is still in the quota though the spec
// no longer sets spec.memory (the engine removes it on this pass).
func hasUnwantedMemory(observed, want map[string]string) bool {
	_, has := observed[hardMemory]
	_, wanted := want[hardMemory]
	return has && !wanted
}
