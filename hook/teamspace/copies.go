package teamspace

import (
	"encoding/json"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// What the platform puts in every team namespace (issue #53): an object of
// a copied kind in TemplatesNamespace labelled TemplateLabel=true is a
// template, and every namespace of every TeamSpace it selects gets a copy
// of it, of the same name. A copy is a child like any other: it carries
// the TeamSpace label (so teamspace-children refuses an owner's change),
// the engine puts it back when it is changed or deleted, and it goes when
// its template goes, stops selecting the TeamSpace or loses the label.
//
// The engine shows the templates as related objects (Customize asks for
// them), and re-syncs every TeamSpace when one changes: that is the whole
// propagation, one sync per TeamSpace.
const (
	// TemplatesNamespace is where templates live; the label anywhere else
	// copies nothing (and teamspace-templates refuses it).
	TemplatesNamespace = v1alpha1.SystemNamespace
)

// Reasons in status.templates.
const (
	// TemplateNameTaken: a child of the TeamSpace's own has the template's
	// kind and name in that namespace; the child stays, no copy is made.
	TemplateNameTaken = "NameTaken"
	// TemplateNotCopied: the copy is not there yet; if it stays so, an
	// object of that name that is not the TeamSpace's holds it (the engine
	// never overwrites it).
	TemplateNotCopied = "NotCopied"
	// TemplateInvalidSelector: the selector does not parse; copied nowhere.
	TemplateInvalidSelector = "InvalidSelector"
)

// TemplateStatus is one entry of status.templates.
type TemplateStatus = v1alpha1.TemplateStatus

// copyKind is a kind the platform may copy: how the engine keys it and
// which of a template's fields a copy carries (besides name and labels),
// as the API server stored them, so that a copy is in the canonical form
// and nothing churns.
type copyKind struct {
	key, apiVersion, kind, resource string
	// counted is the team-objects key that counts the kind, "" if none:
	// a namespace's count is raised by its copies (copiesCounted).
	counted corev1.ResourceName
	content func(o *Object) map[string]any
}

// copyKinds are the kinds copied, in answer order. Others are not: every
// kind copied is one the engine watches in the whole cluster and may write
// in every team namespace (its informers are cluster-wide), and a workload,
// a ServiceAccount or a Role would give the platform's objects rights or
// pods inside a team namespace; a RoleBinding to a ClusterRole does that
// only through the roles the engine may bind (hack/deploy/rbac.yaml).
var copyKinds = []*copyKind{{
	key: "ConfigMap.v1", apiVersion: "v1", kind: "ConfigMap", resource: "configmaps", counted: "configmaps",
	content: func(o *Object) map[string]any {
		return fields("data", o.Data, "binaryData", o.BinaryData)
	},
}, {
	key: "Secret.v1", apiVersion: "v1", kind: "Secret", resource: "secrets", counted: "secrets",
	content: func(o *Object) map[string]any {
		return fields("type", o.Type, "data", o.Data)
	},
}, {
	key: "NetworkPolicy.networking.k8s.io/v1", apiVersion: "networking.k8s.io/v1", kind: "NetworkPolicy", resource: "networkpolicies",
	content: func(o *Object) map[string]any { return fields("spec", o.Spec) },
}, {
	key: "RoleBinding.rbac.authorization.k8s.io/v1", apiVersion: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", resource: "rolebindings",
	content: func(o *Object) map[string]any {
		return fields("roleRef", o.RoleRef, "subjects", o.Subjects)
	},
}}

// fields builds a copy's content from name/value pairs, leaving out the
// empty ones (the API server stores none, and one answered would be a
// difference on every sync); raw JSON stays as stored.
func fields(pairs ...any) map[string]any {
	out := map[string]any{}
	for i := 0; i < len(pairs); i += 2 {
		name := pairs[i].(string)
		switch v := pairs[i+1].(type) {
		case string:
			if v != "" {
				out[name] = v
			}
		case map[string]string:
			if len(v) > 0 {
				out[name] = v
			}
		case json.RawMessage:
			var decoded any
			if len(v) > 0 && json.Unmarshal(v, &decoded) == nil && decoded != nil {
				out[name] = decoded
			}
		}
	}
	return out
}

func copyKindByKey(key string) *copyKind {
	for _, k := range copyKinds {
		if k.key == key {
			return k
		}
	}
	return nil
}

// template is one template the engine shows, with its selector parsed.
type template struct {
	kind *copyKind
	obj  *Object
	// selector selects the TeamSpaces it is copied for; nil when it does
	// not parse (err says why).
	selector labels.Selector
	err      error
}

func (t *template) String() string { return t.kind.kind + " " + t.obj.Metadata.Name }

// selected are the templates that select this TeamSpace by its labels.
func (o *observation) selected(all []*template) []*template {
	set := labels.Set(o.parent.Metadata.Labels)
	var out []*template
	for _, t := range all {
		if t.selector != nil && t.selector.Matches(set) {
			out = append(out, t)
		}
	}
	return out
}

// ownName reports whether name is that of a child of the TeamSpace's own
// of kind k in unit u (team-isolation, team-owners): a template of that
// name is not copied there (the child stays), and an observed object of
// that name is the child, not a copy.
func ownName(k *copyKind, name string, u *unit) bool {
	for _, ct := range perNamespaceTypes {
		if ct.kind == k.kind && ct.apiVersion == k.apiVersion && ct.name(u) == name {
			return true
		}
	}
	return false
}

// copyOf is the copy of t in unit u's namespace, as answered: the
// template's labels but TemplateLabel, with the TeamSpace label; its
// annotations are not copied (ours would select nothing there, kubectl's
// would describe the template).
func copyOf(t *template, u *unit) map[string]any {
	lbls := map[string]any{v1alpha1.TeamSpaceLabel: u.teamspace}
	for k, v := range t.obj.Metadata.Labels {
		if k != v1alpha1.TemplateLabel && k != v1alpha1.TeamSpaceLabel {
			lbls[k] = v
		}
	}
	out := t.kind.content(t.obj)
	out["apiVersion"], out["kind"] = t.kind.apiVersion, t.kind.kind
	out["metadata"] = map[string]any{"name": t.obj.Metadata.Name, "namespace": u.namespace, "labels": lbls}
	return out
}

// unitCopies are the copies unit u gets of the selected templates, and
// the templates whose name is one of its own children's.
func unitCopies(selected []*template, u *unit) (copies, taken []*template) {
	for _, t := range selected {
		if ownName(t.kind, t.obj.Metadata.Name, u) {
			taken = append(taken, t)
		} else {
			copies = append(copies, t)
		}
	}
	return copies, taken
}

// copiesCounted counts a unit's copies by the team-objects key that counts
// them: the namespace's counts are raised by as many, so that the
// platform's copies never take the team's count, and a team at its count
// still gets them.
func copiesCounted(copies []*template) map[corev1.ResourceName]int64 {
	var out map[corev1.ResourceName]int64
	for _, t := range copies {
		if t.kind.counted != "" {
			if out == nil {
				out = map[corev1.ResourceName]int64{}
			}
			out[t.kind.counted]++
		}
	}
	return out
}

// countsAsked is team-objects as compared with the observed one
// (childType.asked): a count the copies raise is as asked anywhere from
// the spec's count plus the copies there now to the spec's plus the copies
// asked for, so that a template added or removed, which changes the count
// before its copies come or go, does not make every TeamSpace out of date
// for a pass. The answer still carries the count with every copy asked.
func countsAsked(u *unit, desired object, observed *Object) object {
	live, err := quotaType.decode(observed)
	if err != nil {
		return desired
	}
	want := desired.(*corev1.ResourceQuota)
	out := want.DeepCopy()
	asked, seen := copiesCounted(u.copies), u.copiesSeen
	for _, k := range copyKinds {
		n, counted := u.spec.Objects[k.counted]
		got, ok := live.(*corev1.ResourceQuota).Spec.Hard[k.counted]
		if k.counted == "" || !counted || !ok {
			continue
		}
		lo, hi := n+min(asked[k.counted], seen[k.counted]), n+max(asked[k.counted], seen[k.counted])
		if v := got.Value(); v >= lo && v <= hi && got.Cmp(*resource.NewQuantity(v, resource.DecimalSI)) == 0 {
			out.Spec.Hard[k.counted] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return out
}

// answerCopies adds the copies of unit u to the answer (only once its
// namespace exists and is not terminating, as every child inside it) and
// returns what status.templates says of u: a name taken by a child of its
// own, and a copy not there yet (only once its namespace is there).
func (o *observation) answerCopies(a *answered, u *unit) []TemplateStatus {
	var out []TemplateStatus
	for _, t := range u.taken {
		out = append(out, TemplateStatus{Template: t.String(), Namespace: u.namespace, Reason: TemplateNameTaken,
			Message: fmt.Sprintf("%s %s/%s is the TeamSpace's own; the template is not copied here (rename it)", t.kind.kind, u.namespace, t.obj.Metadata.Name)})
	}
	_, state := o.namespace(u)
	if state == namespaceMissing || state == namespaceTerminating {
		return out
	}
	for _, t := range u.copies {
		a.children = append(a.children, copyOf(t, u))
		if o.copy(t, u) == nil {
			out = append(out, TemplateStatus{Template: t.String(), Namespace: u.namespace, Reason: TemplateNotCopied,
				Message: fmt.Sprintf("%s %s/%s is not there yet; if this stays, an object of that name that is not the platform's holds it and is kept as it is (rename or delete it)", t.kind.kind, u.namespace, t.obj.Metadata.Name)})
		}
	}
	return out
}

// settled is status.templates without the copies not there yet: what a
// TeamSpace being created says through both of its first syncs (sync.go
// creating), before and once its namespace exists.
func settled(all []TemplateStatus) []TemplateStatus {
	var out []TemplateStatus
	for _, s := range all {
		if s.Reason != TemplateNotCopied {
			out = append(out, s)
		}
	}
	return out
}

// invalidTemplates are status.templates' entries of templates whose
// selector does not parse: copied nowhere until it is fixed.
func invalidTemplates(all []*template) []TemplateStatus {
	var out []TemplateStatus
	for _, t := range all {
		if t.err != nil {
			out = append(out, TemplateStatus{Template: t.String(), Reason: TemplateInvalidSelector,
				Message: fmt.Sprintf("annotation %s of %s/%s: %v; copied to no TeamSpace until it is fixed", v1alpha1.TemplateSelectorAnnotation, TemplatesNamespace, t.obj.Metadata.Name, t.err)})
		}
	}
	return out
}

// keepCopies answers every copy observed in unit u's namespace as it is
// (its content as the engine last applied it): while the spec is invalid,
// the requester over the allowance, the archive pending or the namespace
// no longer asked for, nothing in a namespace is deleted.
func (o *observation) keepCopies(a *answered, u *unit) {
	for _, t := range o.keptTemplates(u) {
		a.children = append(a.children, copyOf(t, u))
	}
}

// copyKeys are the engine keys of the copied kinds the registry does not
// declare already.
func copyKeys() []string {
	var out []string
	for _, k := range copyKinds {
		if childTypeByKey(k.key) == nil && !slices.Contains(out, k.key) {
			out = append(out, k.key)
		}
	}
	return out
}
