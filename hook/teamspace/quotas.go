package teamspace

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// A team namespace's quotas are not the CompositeController's children but
// a DecoratorController's (teamspace-quotas in compositecontroller.yaml),
// whose parent is the namespace's LimitRange team-defaults. The quota
// controller rewrites a quota's status on every pod created or deleted in
// the namespace, and the engine syncs the parent of a child on every
// change of it, status included: as a child of the TeamSpace, each pod
// event cost a sync of the TeamSpace, and every CompositeController sync
// reads the TeamSpace live (a GET) before it compares its status. A
// DecoratorController's sync compares the parent from its cache and writes
// nothing when nothing changed: a pod event now costs the engine one call
// of this hook and no request (BENCHMARKS.md §13).
//
// Why the LimitRange and not the namespace (issue #55): the engine finds a
// DecoratorController's attachments by listing every object of their kind
// in the parent's namespace, every quota of the cluster for a namespace
// parent (O(N) per sync, O(N²) for a fleet being created); and a change
// of a namespace is matched against every TeamSpace's related objects
// (customize.go), so each report written on it cost O(N) too. A LimitRange
// is namespaced and no TeamSpace's related object. Its quotas live and die
// with it: a LimitRange deleted by hand takes them along (the garbage
// collector), and both come back at once, as every child does.
//
// The TeamSpace's sync stays the one place that decides: it writes the
// quotas each namespace must hold into its LimitRange (QuotasAnnotation),
// and this hook makes them, reporting back on the LimitRange what the
// quotas hold (QuotasObservedAnnotation), which Sync reads as it read the
// quotas themselves (Ready waits for them, an invalid spec keeps them as
// last applied, a kept namespace's share stays reserved). A parent
// namespace (the DecoratorController as issue #54 shipped it) is still
// answered, so that the hook may be upgraded first.
const (
	// QuotasControllerName is the DecoratorController that makes the
	// quotas.
	QuotasControllerName = "teamspace-quotas"
)

// quotaNames are the quotas a team namespace may hold.
var quotaNames = []string{QuotaName, ObjectsQuotaName}

// QuotasRequest is what a DecoratorController sends: the parent (a team
// namespace's LimitRange) as object, its children as attachments, keyed
// like Request's children.
type QuotasRequest struct {
	Object      *Object              `json:"object"`
	Attachments map[string]ObjectMap `json:"attachments"`
}

// QuotasResponse is the answer: the quotas, and the report on the
// parent. Status is always null (the engine leaves the parent's status
// alone) and Attachments never null (the engine deletes every
// attachment left out, and null would mean all of them).
type QuotasResponse struct {
	Annotations map[string]*string `json:"annotations"`
	Status      *struct{}          `json:"status"`
	Attachments []map[string]any   `json:"attachments"`
}

// Validate checks that the request is one Quotas can answer: a team
// namespace's LimitRange (or the team namespace itself, the parent before
// issue #55), and ResourceQuotas as its only attachments.
func (r *QuotasRequest) Validate() error {
	p := r.Object
	if p == nil {
		return badRequest("MissingParent", "request has no object")
	}
	switch {
	case p.APIVersion == "v1" && p.Kind == "LimitRange":
		if p.Metadata.Name != LimitRangeName {
			return badRequest("NotATeamLimitRange", "LimitRange %s/%s is not a team namespace's %s", p.Metadata.Namespace, p.Metadata.Name, LimitRangeName)
		}
	case p.APIVersion == "v1" && p.Kind == "Namespace":
	default:
		return badRequest("WrongKind", "object is apiVersion %q kind %q, want a LimitRange", p.APIVersion, p.Kind)
	}
	if ns := r.namespace(); p.Metadata.Labels[v1alpha1.TeamSpaceLabel] == "" || !strings.HasPrefix(ns, NamespacePrefix) {
		return badRequest("NotATeamNamespace", "namespace %q is not a team namespace (no label %s, or not named %s*)", ns, v1alpha1.TeamSpaceLabel, NamespacePrefix)
	}
	return onlyAttachments(r.Attachments, QuotasControllerName, quotaType.key, quotaType.kind)
}

// onlyAttachments checks that a DecoratorController's request holds
// attachments of its one type alone (engine key and kind).
func onlyAttachments(attachments map[string]ObjectMap, controller, key, kind string) error {
	for k, objs := range attachments {
		if k != key {
			return badRequest("UnexpectedChild", "attachments of type %q are not managed by %s (want %s)", k, controller, key)
		}
		for name, o := range objs {
			if o == nil || o.Kind != kind {
				return badRequest("UnexpectedChild", "attachments[%q][%q] is not a %s", k, name, kind)
			}
		}
	}
	return nil
}

// Quotas answers the DecoratorController of a team namespace's LimitRange:
// the quotas its QuotasAnnotation asks for, in its namespace, each with
// the TeamSpace label and only spec.hard, and the report of what the
// quotas there hold. An annotation that is missing or does not parse is
// refused: the engine then changes nothing, so no quota is deleted or
// weakened, and records the error as an event on the parent.
func Quotas(r *QuotasRequest) (*QuotasResponse, error) {
	p, ns := r.Object, r.namespace()
	desired, err := quotasOf(p.Metadata.Annotations, v1alpha1.QuotasAnnotation)
	if err != nil {
		return nil, badRequest("InvalidQuotas", "%s: %v; its quotas are kept as they are", r.parentName(), err)
	}
	resp := &QuotasResponse{Attachments: []map[string]any{}, Annotations: map[string]*string{}}
	for _, name := range slices.Sorted(maps.Keys(desired)) {
		q := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: desired[name]}}
		q.Name, q.Namespace = name, ns
		q.Labels = map[string]string{v1alpha1.TeamSpaceLabel: p.Metadata.Labels[v1alpha1.TeamSpaceLabel]}
		resp.Attachments = append(resp.Attachments, quotaType.answer(q))
	}

	observed := map[string]corev1.ResourceList{}
	var overShareMsg string
	for _, o := range r.Attachments[quotaType.key] {
		if !slices.Contains(quotaNames, o.Metadata.Name) {
			continue
		}
		q, err := quotaType.decode(o)
		if err != nil {
			continue // reported as missing: Sync waits, the engine writes it again
		}
		observed[o.Metadata.Name] = q.(*corev1.ResourceQuota).Spec.Hard
		if o.Metadata.Name == QuotaName {
			overShareMsg = overShare(o)
		}
	}
	// Nothing there is no report at all: a new namespace costs no write
	// (and no sync of its TeamSpace) before its quotas exist.
	resp.Annotations[v1alpha1.QuotasObservedAnnotation] = nil // deletes it
	if len(observed) > 0 {
		report := encodeQuotas(observed)
		resp.Annotations[v1alpha1.QuotasObservedAnnotation] = &report
	}
	resp.Annotations[v1alpha1.OverShareAnnotation] = nil
	if overShareMsg != "" {
		resp.Annotations[v1alpha1.OverShareAnnotation] = &overShareMsg
	}
	return resp, nil
}

// namespace is the team namespace of the parent: a LimitRange's, or the
// namespace itself.
func (r *QuotasRequest) namespace() string {
	if r.Object.Kind == "Namespace" {
		return r.Object.Metadata.Name
	}
	return r.Object.Metadata.Namespace
}

// parentName names the parent in messages: "namespace team-a",
// "LimitRange team-a/team-defaults".
func (r *QuotasRequest) parentName() string {
	if r.Object.Kind == "Namespace" {
		return "namespace " + r.Object.Metadata.Name
	}
	return "LimitRange " + r.Object.Metadata.Namespace + "/" + r.Object.Metadata.Name
}

// quotasOf reads an annotation of quotas (QuotasAnnotation's form).
func quotasOf(annotations map[string]string, key string) (map[string]corev1.ResourceList, error) {
	raw, ok := annotations[key]
	if !ok {
		return nil, fmt.Errorf("no annotation %s", key)
	}
	var quotas map[string]corev1.ResourceList
	if err := json.Unmarshal([]byte(raw), &quotas); err != nil {
		return nil, fmt.Errorf("annotation %s does not parse: %v", key, err)
	}
	for name := range quotas {
		if !slices.Contains(quotaNames, name) {
			return nil, fmt.Errorf("annotation %s names quota %q (want %s)", key, name, strings.Join(quotaNames, " or "))
		}
	}
	return quotas, nil
}

// encodeQuotas is the annotation form of quotas: JSON with sorted keys and
// the quantities as the API server stores them, so that the same quotas
// always read the same (a different string would be a write).
func encodeQuotas(quotas map[string]corev1.ResourceList) string {
	b, err := json.Marshal(quotas)
	if err != nil {
		// ResourceLists always encode.
		panic(fmt.Sprintf("teamspace: cannot encode quotas: %v", err))
	}
	return string(b)
}
