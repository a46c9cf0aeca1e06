package teamspace

import (
	"encoding/base64"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The DecoratorControllers' endpoints, apart from the TeamSpace's sync:
// /quotas answers teamspace-quotas (a team namespace's LimitRange and its
// quotas), /templates and /templates/customize answer teamspace-templates
// (the bundle of the platform's templates); /adopted and
// /adopted/customize answer teamspace-adopted (adopt.go). Each reads the wire format its
// sync counterpart writes or reads (quotas.go: the quotas annotation;
// bundle.go: the bundle).

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
	Annotations        map[string]*string `json:"annotations"`
	Status             *struct{}          `json:"status"`
	Attachments        []map[string]any   `json:"attachments"`
	ResyncAfterSeconds float64            `json:"resyncAfterSeconds,omitempty"`
}

// QuotaMissingRetrySeconds is how soon the engine asks again while a
// quota the LimitRange wants is not among its attachments. The engine
// creates it, and a create refused as AlreadyExists it swallows without a
// retry: that is the answer while the quota of a LimitRange deleted by
// hand (and made again at once) still waits for the garbage collector.
// When the collector deletes that quota, the event names the old
// LimitRange, so nothing would sync the new one for hours (its resync) and
// the namespace would stay without quota: found by the fault run (issue
// #67) with kube-controller-manager restarting. Costs one more sync of
// the LimitRange, from the cache, per quota created.
const QuotaMissingRetrySeconds = 1

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
	// A namespace not named team-* is one a TeamSpace adopted (adopt.go):
	// its LimitRange is the TeamSpace's child all the same.
	team := func(ns string) bool {
		return strings.HasPrefix(ns, NamespacePrefix) || (p.Kind == "LimitRange" && adoptable(ns) == "")
	}
	if ns := r.namespace(); p.Metadata.Labels[v1alpha1.TeamSpaceLabel] == "" || !team(ns) {
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
	// (and no sync of its TeamSpace) before its quotas exist. Nor is a
	// part of them on a carrier that has never had a report: the engine
	// creates a new namespace's quotas one after the other, and a report
	// of the first alone was one more write of the LimitRange, and one
	// more sync of its TeamSpace, for 73 of 100 TeamSpaces in a mass
	// create (issue #68). Once there has been a report, it always says
	// what is there: a quota deleted later shows as missing.
	_, reported := p.Metadata.Annotations[v1alpha1.QuotasObservedAnnotation]
	complete := true
	for name := range desired {
		if _, ok := observed[name]; !ok {
			complete = false
		}
	}
	resp.Annotations[v1alpha1.QuotasObservedAnnotation] = nil // deletes it
	if len(observed) > 0 && (reported || complete) {
		report := encodeQuotas(observed)
		resp.Annotations[v1alpha1.QuotasObservedAnnotation] = &report
	}
	resp.Annotations[v1alpha1.OverShareAnnotation] = nil
	if overShareMsg != "" {
		resp.Annotations[v1alpha1.OverShareAnnotation] = &overShareMsg
	}
	if !complete {
		resp.ResyncAfterSeconds = QuotaMissingRetrySeconds
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

// TemplatesRequest is what the DecoratorController of the bundle sends:
// its parent, the CompositeController of TeamSpaces, as object; the bundle
// as its attachment; the templates as related objects.
type TemplatesRequest struct {
	Object      *Object              `json:"object"`
	Attachments map[string]ObjectMap `json:"attachments"`
	Related     map[string]ObjectMap `json:"related"`
}

// TemplatesResponse is the answer: the bundle. Status is always null (the
// parent is left alone) and Attachments never null (null would delete
// the bundle).
type TemplatesResponse struct {
	Status             *struct{}        `json:"status"`
	Attachments        []map[string]any `json:"attachments"`
	ResyncAfterSeconds float64          `json:"resyncAfterSeconds,omitempty"`
}

// BundleMissingRetrySeconds is how soon the engine asks again while the
// bundle is not among the attachments (or is going). The engine creates
// it, and a create refused as AlreadyExists it swallows without a retry:
// that is the answer while the bundle of a CompositeController that was
// replaced (deleted and applied again, a reinstall) still waits for the
// garbage collector, the old bundle being the old controller's. When the
// collector deletes it, the event names the old controller, so nothing
// would sync the new one for hours, and every TeamSpace would go on
// without the platform's templates (a new one would get none of their
// copies): found on a two-core machine, where the collector came seconds
// after the walkthrough applied the CompositeController again (issue
// #74). Costs one more sync of the CompositeController, from the cache,
// each time the bundle is made.
const BundleMissingRetrySeconds = 1

// Validate checks that the request is one Templates can answer: the
// CompositeController of TeamSpaces, and Secrets as its only attachments.
func (r *TemplatesRequest) Validate() error {
	p := r.Object
	if p == nil {
		return badRequest("MissingParent", "request has no object")
	}
	if !isTeamSpaceController(p) {
		return badRequest("NotTheTeamSpaceController", "object is %s %s %q, want CompositeController %s of metacontroller.k8s.io/v1alpha1 (label %s selects it)", p.APIVersion, p.Kind, p.Metadata.Name, ControllerName, v1alpha1.TemplatesBundleLabel)
	}
	return onlyAttachments(r.Attachments, TemplatesControllerName, bundleKind.key, bundleKind.kind)
}

// isTeamSpaceController reports whether p is the CompositeController of
// TeamSpaces, the bundle's one parent.
func isTeamSpaceController(p *Object) bool {
	return p.APIVersion == "metacontroller.k8s.io/v1alpha1" && p.Kind == "CompositeController" && p.Metadata.Name == ControllerName
}

// bundleKind is the bundle's kind: a Secret, since Secret templates are
// in it.
var bundleKind = copyKindByKey("Secret.v1")

// Templates answers the DecoratorController of the bundle: Secret
// TemplatesBundleName holding every template the engine shows. More than
// MaxBundleBytes is refused: the engine then changes nothing (the bundle,
// and so every copy, stays as it was) and records the error as an event
// on the CompositeController.
func Templates(r *TemplatesRequest) (*TemplatesResponse, error) {
	templates := templatesIn(r.Related)
	content, err := encodeBundle(templates)
	if err != nil {
		return nil, badRequest("InvalidTemplates", "cannot encode the templates: %v", err)
	}
	if len(content) > MaxBundleBytes {
		return nil, badRequest("TemplatesTooLarge", "the %d templates in %s take %d bytes together, more than the %d a Secret holds: Secret %s/%s and every copy stay as they were; make the templates fewer or smaller",
			len(templates), TemplatesNamespace, len(content), MaxBundleBytes, TemplatesNamespace, TemplatesBundleName)
	}
	bundle := map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": TemplatesBundleName, "namespace": TemplatesNamespace,
			"labels": map[string]any{"app.kubernetes.io/part-of": "teamspace"}},
		"type": "Opaque",
		"data": map[string]any{TemplatesBundleKey: base64.StdEncoding.EncodeToString(content)},
	}
	resp := &TemplatesResponse{Attachments: []map[string]any{bundle}}
	if !bundleThere(r.Attachments) {
		resp.ResyncAfterSeconds = BundleMissingRetrySeconds
	}
	return resp, nil
}

// bundleThere reports whether the engine shows the bundle as this
// controller's, and not going.
func bundleThere(attachments map[string]ObjectMap) bool {
	for _, o := range attachments[bundleKind.key] {
		if o != nil && o.Metadata.Namespace == TemplatesNamespace && o.Metadata.Name == TemplatesBundleName && o.Metadata.DeletionTimestamp == nil {
			return true
		}
	}
	return false
}

// TemplatesCustomize answers the customize hook of the bundle's
// DecoratorController: the templates of every copied kind, for the
// CompositeController of TeamSpaces; nothing for another parent.
func TemplatesCustomize(r *TemplatesRequest) *CustomizeResponse {
	if r.Object == nil || !isTeamSpaceController(r.Object) {
		return &CustomizeResponse{RelatedResources: []RelatedResourceRule{}}
	}
	return &CustomizeResponse{RelatedResources: templateRules()}
}

// templateRules are the related objects the bundle is made of: the
// templates of every copied kind.
func templateRules() []RelatedResourceRule {
	var out []RelatedResourceRule
	for _, k := range copyKinds {
		out = append(out, RelatedResourceRule{
			APIVersion:    k.apiVersion,
			Resource:      k.resource,
			Namespace:     TemplatesNamespace,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.TemplateLabel: "true"}},
		})
	}
	return out
}
