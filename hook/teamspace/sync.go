package teamspace

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sync computes the desired children and status of a TeamSpace from what the
// engine observed. The request must have passed Validate.
//
// The quota is asked for only once the namespace exists and is not
// terminating: creating it earlier fails and costs a retry with backoff.
// An invalid spec never removes or weakens what exists: the quota the engine
// last applied is answered again until the spec is fixed.
func Sync(r *Request) *Response {
	name := r.Parent.Metadata.Name
	nsName := NamespaceName(name)
	ns, quota := r.observedNamespace(), r.observedQuota()
	resp := newResponse(r)

	if ns == nil {
		if foreign := r.relatedNamespace(); foreign != nil && !ownedBy(foreign, string(r.Parent.Metadata.UID)) {
			resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceConflict, conflictMessage(nsName, foreign))
			return resp
		}
	}

	resp.Children = append(resp.Children, desiredNamespace(name))
	spec, err := ParseSpec(r.Parent.Spec)
	if err != nil {
		msg := fmt.Sprintf("invalid spec: %v; no quota is created until it is fixed", err)
		if quota != nil {
			hard := keptHard(quota)
			resp.Children = append(resp.Children, desiredQuota(name, hard))
			msg = fmt.Sprintf("invalid spec: %v; keeping quota %s until it is fixed", err, describeHard(hard))
		}
		resp.setReady(r, metav1.ConditionFalse, ReasonInvalidSpec, msg)
		return resp
	}

	want := specHard(spec)
	if ns != nil && !isTerminating(ns) {
		resp.Children = append(resp.Children, desiredQuota(name, want))
	}
	quotaRef := nsName + "/" + QuotaName
	switch {
	case ns == nil:
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespacePending, fmt.Sprintf("waiting for namespace %s to be created", nsName))
	case isTerminating(ns):
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceTerminating, fmt.Sprintf("namespace %s is terminating; it is created again once it is gone", nsName))
	case ns.Status.Phase != "Active":
		resp.setReady(r, metav1.ConditionFalse, ReasonNamespaceNotActive, fmt.Sprintf("namespace %s is in phase %q, want Active", nsName, ns.Status.Phase))
	case quota == nil:
		resp.setReady(r, metav1.ConditionFalse, ReasonQuotaPending, fmt.Sprintf("waiting for ResourceQuota %s to be created with %s", quotaRef, describeHard(want)))
	case !hardMatches(quota.Spec.Hard, want):
		resp.setReady(r, metav1.ConditionFalse, ReasonQuotaOutOfDate, fmt.Sprintf("ResourceQuota %s has %s, updating to %s", quotaRef, describeHard(quota.Spec.Hard), describeHard(want)))
	default:
		resp.setReady(r, metav1.ConditionTrue, ReasonReady, fmt.Sprintf("namespace %s is Active with quota %s", nsName, describeHard(want)))
	}
	return resp
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

// describeHard prints quota limits in a fixed order for messages.
func describeHard(hard map[string]string) string {
	get := func(k string) string {
		if v, ok := hard[k]; ok {
			return v
		}
		return "<unset>"
	}
	return fmt.Sprintf("pods=%s, requests.cpu=%s", get(hardPods), get(hardCPU))
}
