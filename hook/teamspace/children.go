package teamspace

import (
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// childTypes are the kinds of child a TeamSpace has, one entry each, in the
// order they are answered and reported. Sync, the invalid-spec path,
// finalize and request validation loop over this list; everything about a
// type is in its entry, built in the type's own file. Adding a child type
// is one file and one line here (CONTRIBUTING.md shows how), plus the
// type in compositecontroller.yaml and the engine's RBAC.
var childTypes = []*childType{
	namespaceType,
	quotaType,
	objectsQuotaType,
	limitRangeType,
	roleBindingType,
	networkPolicyType,
	ownerRoleType,
	ownerBindingType,
}

// perNamespaceTypes are the types answered once per namespace of a team
// (unit.go), onceTypes those answered once per TeamSpace, insideTypes
// those inside a namespace (what an adopted one holds of the team's at
// most, adopt.go); each in registry order.
var perNamespaceTypes, onceTypes, insideTypes []*childType

func init() {
	for _, t := range childTypes {
		t.key = t.kind + "." + t.apiVersion
		if t.once {
			onceTypes = append(onceTypes, t)
		} else {
			perNamespaceTypes = append(perNamespaceTypes, t)
		}
		if !t.once && t.namespaced {
			insideTypes = append(insideTypes, t)
		}
	}
}

// childType is one kind of child: how the engine keys it, how it is built
// from a spec, which of its fields the hook owns and how an observed one is
// compared with what is wanted.
type childType struct {
	// key is the engine's key for the type in a request's children,
	// kind.apiVersion ("Namespace.v1", "RoleBinding.rbac.authorization.k8s.io/v1");
	// set once from kind and apiVersion (init), never written in an entry.
	key        string
	apiVersion string
	kind       string
	// name is the child's name in a unit (one namespace of the TeamSpace,
	// unit.go); a namespaced child lives in the unit's namespace and is
	// asked for only once that namespace is Active (creating it earlier
	// fails and costs a retry with backoff).
	name       func(u *unit) string
	namespaced bool
	// once: one child per TeamSpace (the owners' ClusterRole and its
	// binding), built from team-<name>'s unit; every other type is
	// answered once per namespace of the team.
	once bool
	// after: the child is asked for only once the engine shows a child of
	// that type, i.e. one the TeamSpace owns (the engine shows no other).
	// The owners' ClusterRoleBinding waits for their ClusterRole, so that
	// it never binds a role of that name someone else made.
	after *childType
	// optional: a valid spec may ask for none. The engine deletes the
	// child then, reported as ReasonChildRemoving until it is gone.
	optional bool
	// pendingReason and outOfDateReason are the Ready reasons for a child
	// not yet created and one that differs from the spec.
	pendingReason, outOfDateReason string

	// newObject allocates an empty object of the type.
	newObject func() object
	// build is the child a unit of a valid spec asks for (its spec is the
	// unit's part), nil if it asks for none (optional types only); observed
	// is the live child or nil, for a type whose answer depends on it.
	// Name, namespace and the TeamSpace label are set afterwards by the
	// registry.
	build func(u *unit, observed *Object) object
	// decode reads an observed child's raw content fields into a new object;
	// the metadata beyond labels is not needed.
	decode func(o *Object) (object, error)
	// content is obj reduced to the fields the hook owns, besides name,
	// namespace and the TeamSpace label: what is compared with the spec and
	// what is kept while a spec is invalid. Fields others add beside them
	// are theirs (the engine's 3-way merge keeps them) and content leaves
	// them out; inside them the comparison is exact (apimachinery's
	// semantic DeepEqual: quantities by value), so a key or item added to
	// an owned map or list is a difference too (strangers.go removes it).
	content func(obj object) object
	// compared, if set, is content in the form compared: a list the engine
	// merges by name (subjects) sorted by name, since the engine keeps the
	// live order.
	compared func(obj object) object
	// viaDecorator: a quota, made by the DecoratorController of the
	// team namespace (quotas.go) where the CompositeController declares
	// no ResourceQuota: answered in the namespace's QuotasAnnotation, not
	// as a child, and observed as the namespace reports it.
	viaDecorator bool
	// labelsIgnored: an observed child's labels are not compared, only its
	// content.
	labelsIgnored bool
	// asked, if set, is what an observed child of a unit is compared with
	// in place of desired: desired with the values where the observed one
	// is as good taken from it (team-objects' counts while the platform's
	// copies come and go, copies.go). The answer is desired still.
	asked func(u *unit, desired object, observed *Object) object

	// Optional parts of messages. describe prints a child's content
	// ("pods=4, requests.cpu=500m"): pending and out-of-date messages then
	// name the values, and a kept child is named by noun and describe.
	describe func(obj object) string
	noun     string
	// outOfDateMessage replaces the generic out-of-date message.
	outOfDateMessage func(ref string, observed, desired object) string
	// keptWithout is the child to answer while the spec is invalid and none
	// is observed; nil means none.
	keptWithout func(u *unit) object
	// ready is the type's part of a unit's Ready message.
	ready func(u *unit) string
}

// object is a typed child: any k8s.io/api object.
type object interface {
	metav1.Object
	runtime.Object
}

// ref is how the engine keys the child of a unit: namespace/name for a
// namespaced child of a cluster-scoped parent, else its name. Messages use
// the same form.
func (t *childType) ref(u *unit) string {
	if t.namespaced {
		return u.namespace + "/" + t.name(u)
	}
	return t.name(u)
}

// childTypeKeys are the engine keys of the registry, each once, in
// registry order: several types may share one (team-quota and team-objects
// are both ResourceQuota.v1), the controller declares it once.
func childTypeKeys() []string {
	var keys []string
	for _, t := range childTypes {
		if !slices.Contains(keys, t.key) {
			keys = append(keys, t.key)
		}
	}
	return keys
}

// childTypeByKey finds the first declared type of an engine key.
func childTypeByKey(key string) *childType {
	for _, t := range childTypes {
		if t.key == key {
			return t
		}
	}
	return nil
}

// withMeta sets what every child carries: its name, its namespace (set
// explicitly: the engine would otherwise use the parent's, which is empty
// for a cluster-scoped TeamSpace) and the TeamSpace label, kept beside the
// labels the type sets itself.
func (t *childType) withMeta(u *unit, obj object) object {
	obj.SetName(t.name(u))
	if t.namespaced {
		obj.SetNamespace(u.namespace)
	}
	labels := map[string]string{v1alpha1.TeamSpaceLabel: u.teamspace}
	for k, v := range obj.GetLabels() {
		if k != v1alpha1.TeamSpaceLabel {
			labels[k] = v
		}
	}
	obj.SetLabels(labels)
	return obj
}

// desired is the child a unit of a valid spec asks for, nil if none.
func (t *childType) desired(u *unit, observed *Object) object {
	obj := t.build(u, observed)
	if obj == nil {
		return nil
	}
	return t.withMeta(u, obj)
}

// matches reports whether an observed child holds what desired sets: every
// label desired sets (unless labelsIgnored), and its content.
func (t *childType) matches(desired object, o *Object) bool {
	if !t.labelsIgnored {
		for k, v := range desired.GetLabels() {
			if o.Metadata.Labels[k] != v {
				return false
			}
		}
	}
	observed, err := t.decode(o)
	if err != nil {
		return false
	}
	form := t.content
	if t.compared != nil {
		form = t.compared
	}
	return equality.Semantic.DeepEqual(form(desired), form(observed))
}

// kept is the child to answer while the spec is invalid: its content as the
// engine last applied it (its annotation), else as observed. Answering it
// again, rather than leaving it out, is what stops the engine from deleting
// it or weakening it. Nil when there is nothing to keep.
func (t *childType) kept(u *unit, o *Object) object {
	if o == nil {
		if t.keptWithout == nil {
			return nil
		}
		return t.withMeta(u, t.keptWithout(u))
	}
	source, err := t.decode(o)
	if err != nil {
		source = t.newObject()
	}
	if applied := t.lastApplied(o); applied != nil {
		source = applied
	}
	return t.withMeta(u, t.content(source))
}

// lastApplied decodes the child the engine last applied (its annotation);
// nil if there is none, it does not parse, or it holds none of the fields
// the hook sets.
func (t *childType) lastApplied(o *Object) object {
	applied := t.newObject()
	if !decodeLastApplied(o, applied) {
		return nil
	}
	if equality.Semantic.DeepEqual(t.content(applied), t.content(t.newObject())) {
		return nil
	}
	return applied
}

// pendingMessage and outOfDateMessageFor say what is wrong with a child.
func (t *childType) pendingMessage(ref string, desired object) string {
	if t.describe != nil {
		return fmt.Sprintf("waiting for %s %s to be created with %s", t.kind, ref, t.describe(desired))
	}
	return fmt.Sprintf("waiting for %s %s to be created", t.kind, ref)
}

func (t *childType) outOfDateMessageFor(ref string, o *Object, desired object) string {
	observed, err := t.decode(o)
	if err != nil {
		observed = t.newObject()
	}
	switch {
	case t.outOfDateMessage != nil:
		return t.outOfDateMessage(ref, observed, desired)
	case t.describe != nil:
		return fmt.Sprintf("%s %s has %s, updating to %s", t.kind, ref, t.describe(observed), t.describe(desired))
	}
	return fmt.Sprintf("%s %s differs from the spec, updating it", t.kind, ref)
}

// keptName is how the invalid-spec message names a kept child.
func (t *childType) keptName(u *unit, kept object) string {
	if t.describe != nil {
		return t.noun + " " + t.describe(kept)
	}
	return t.kind + " " + t.name(u)
}

// answer encodes a child for the engine: its typed fields as JSON values,
// with its apiVersion and kind, and without the empty spec or status a
// typed object always has (an empty {} the API server drops would be a
// difference the engine writes on every sync, and would change the last
// applied annotation of every child on upgrade).
func (t *childType) answer(obj object) map[string]any {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		// Only a type the converter cannot handle fails, and every child
		// type is a k8s.io/api type it handles.
		panic(fmt.Sprintf("teamspace: cannot encode %s: %v", t.kind, err))
	}
	m["apiVersion"], m["kind"] = t.apiVersion, t.kind
	for _, f := range []string{"spec", "status"} {
		if v, ok := m[f].(map[string]any); ok && len(v) == 0 {
			delete(m, f)
		}
	}
	return m
}

// decodeRaw decodes one raw content field; absent is the zero value.
func decodeRaw(raw json.RawMessage, into any) error {
	if len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, into)
}
