package teamspace

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// ownedNamespaceLabels are the namespace labels the hook sets.
var ownedNamespaceLabels = []string{TeamSpaceLabel, PodSecurityEnforceLabel, PodSecurityEnforceVersionLabel}

// lastApplied decodes the child the engine last applied (its annotation),
// nil if there is none or it does not parse.
func lastApplied(o *Object) map[string]any {
	last, ok := o.Metadata.Annotations[LastAppliedAnnotation]
	if !ok {
		return nil
	}
	var applied map[string]any
	if json.Unmarshal([]byte(last), &applied) != nil {
		return nil
	}
	return applied
}

// keptNamespace is the namespace to answer while the spec is invalid: its
// owned labels as last applied (else as observed), so that an invalid spec
// never lowers the enforced Pod Security level. Without an observed
// namespace it is the default one.
func keptNamespace(teamspace string, ns *Object) *unstructured.Unstructured {
	if ns == nil {
		return desiredNamespace(teamspace, DefaultPodSecurity)
	}
	source := map[string]any{}
	for k, v := range ns.Metadata.Labels {
		source[k] = v
	}
	if applied := lastApplied(ns); applied != nil {
		if l, ok := field(applied, "metadata", "labels").(map[string]any); ok {
			source = l
		}
	}
	labels := map[string]any{TeamSpaceLabel: teamspace}
	for _, k := range ownedNamespaceLabels[1:] {
		if v, ok := source[k].(string); ok {
			labels[k] = v
		}
	}
	return namespaceWithLabels(teamspace, labels)
}

// keptChild is an observed LimitRange, RoleBinding or NetworkPolicy as the
// engine last applied it (its content fields), else as observed: answering
// it again is what stops the engine from deleting it while the spec is
// invalid.
func keptChild(teamspace, group, name string, o *Object) *unstructured.Unstructured {
	content := ownedContent(group, o)
	if applied := lastApplied(o); applied != nil {
		content = map[string]any{}
		for _, k := range contentFields(group) {
			if v, ok := applied[k]; ok {
				content[k] = v
			}
		}
	}
	apiVersion := map[string]string{
		LimitRangeGroup:    "v1",
		RoleBindingGroup:   rbacGroup + "/v1",
		NetworkPolicyGroup: "networking.k8s.io/v1",
	}[group]
	obj := map[string]any{
		"apiVersion": apiVersion,
		"kind":       expectedChildTypes[group],
		"metadata":   childMeta(teamspace, name),
	}
	for k, v := range content {
		obj[k] = v
	}
	return &unstructured.Unstructured{Object: obj}
}

// contentFields are the top-level fields of a child type the hook sets.
func contentFields(group string) []string {
	if group == RoleBindingGroup {
		return []string{"roleRef", "subjects"}
	}
	return []string{"spec"}
}

// ownedContent is what the hook reads of an observed child, as JSON values.
func ownedContent(group string, o *Object) map[string]any {
	content := map[string]any{}
	switch group {
	case RoleBindingGroup:
		if o.RoleRef != nil {
			content["roleRef"] = o.RoleRef
		}
		if o.Subjects != nil {
			content["subjects"] = o.Subjects
		}
	case LimitRangeGroup:
		if o.Spec.Limits != nil {
			content["spec"] = map[string]any{"limits": o.Spec.Limits}
		}
	case NetworkPolicyGroup:
		spec := map[string]any{}
		for k, v := range map[string]any{"podSelector": o.Spec.PodSelector, "policyTypes": o.Spec.PolicyTypes, "ingress": o.Spec.Ingress, "egress": o.Spec.Egress} {
			if v != nil {
				spec[k] = v
			}
		}
		content["spec"] = spec
	}
	return content
}

// field walks nested maps; nil when a step is missing.
func field(obj map[string]any, path ...string) any {
	var cur any = obj
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

// contains reports whether every field of want is in got with the same
// value (lists element by element, same length). This is what the engine's
// 3-way merge reverts: fields someone else added are kept, and are not a
// difference.
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok || !contains(gv, wv) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	default:
		return got == want
	}
}

// childMatches reports whether an observed child holds what desired sets
// (labels and content fields).
func childMatches(group string, desired *unstructured.Unstructured, o *Object) bool {
	for k, v := range desired.GetLabels() {
		if o.Metadata.Labels[k] != v {
			return false
		}
	}
	var want map[string]any
	b, _ := json.Marshal(desired.Object)
	_ = json.Unmarshal(b, &want)
	for _, k := range contentFields(group) {
		if w, ok := want[k]; ok && !contains(ownedContent(group, o)[k], w) {
			return false
		}
	}
	return true
}
