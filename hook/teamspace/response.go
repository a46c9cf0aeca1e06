package teamspace

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Response is the answer to sync and finalize. Children are never null: the
// engine deletes every child left out, and null would mean all of them.
type Response struct {
	Status Status `json:"status"`
	// Children are plain JSON values, encoded with sorted keys; not
	// unstructured.Unstructured, whose MarshalJSON would add an encoder
	// pass and a compaction to every answer.
	Children           []map[string]any `json:"children"`
	ResyncAfterSeconds float64          `json:"resyncAfterSeconds,omitempty"`
	// Finalized is set by finalize only.
	Finalized *bool `json:"finalized,omitempty"`
	// Removals are the archive records of the namespaces this answer lets
	// the engine delete (removal.go): the caller makes each durable before
	// it sends the answer, or answers SyncBlocked. Not sent.
	Removals []NamespaceRemoval `json:"-"`
}

// Status is the TeamSpace status the hook owns. The engine adds
// observedGeneration itself.
type Status struct {
	Namespace string `json:"namespace,omitempty"`
	// Usage is the quota's figures, UsageUnknown each until it reports them.
	Usage *Usage `json:"usage,omitempty"`
	// Namespaces are the team's namespaces when it has more than one
	// (nsstatus.go).
	Namespaces []NamespaceStatus `json:"namespaces,omitempty"`
	// Templates are the platform's templates not copied (copies.go).
	Templates  []TemplateStatus   `json:"templates,omitempty"`
	Conditions []metav1.Condition `json:"conditions"`
}

// CustomizeResponse asks the engine to show namespace team-<name> to sync as
// a related object whoever owns it, so a namespace the engine will not adopt
// is reported instead of leaving the TeamSpace waiting in silence.
type CustomizeResponse struct {
	RelatedResources []RelatedResourceRule `json:"relatedResources"`
}

// RelatedResourceRule selects related objects by namespace and name, or by
// labels.
type RelatedResourceRule struct {
	APIVersion    string                `json:"apiVersion"`
	Resource      string                `json:"resource"`
	Namespace     string                `json:"namespace,omitempty"`
	Names         []string              `json:"names,omitempty"`
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// newResponse is a response with no children and the status every answer
// has: team-<name> once it is observed and, for quotas that are the
// CompositeController's children, their figures.
func newResponse(o *observation) *Response {
	resp := &Response{Children: []map[string]any{}}
	if ns := o.teamNamespace(); ns != nil {
		resp.Status.Namespace = ns.Metadata.Name
	}
	resp.Status.Usage = o.teamUsage()
	return resp
}
