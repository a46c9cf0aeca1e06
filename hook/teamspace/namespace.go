package teamspace

import (
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Pod Security admission labels of the team namespace.
const (
	PodSecurityEnforceLabel        = "pod-security.kubernetes.io/enforce"
	PodSecurityEnforceVersionLabel = "pod-security.kubernetes.io/enforce-version"
)

// ownedNamespaceLabels are the namespace's labels the hook owns besides
// the TeamSpace label.
var ownedNamespaceLabels = []string{PodSecurityEnforceLabel, PodSecurityEnforceVersionLabel, v1alpha1.NetworkIsolationLabel, v1alpha1.NodeSelectorLabel}

// namespaceType is namespace team-<name>, labelled with its TeamSpace and
// the Pod Security level it enforces (always the latest version of the
// standard). The engine adds its ownerReference and controller-uid label.
var namespaceType = &childType{
	apiVersion:      "v1",
	kind:            "Namespace",
	name:            func(u *unit) string { return u.namespace },
	pendingReason:   v1alpha1.ReasonNamespacePending,
	outOfDateReason: v1alpha1.ReasonNamespaceOutOfDate,
	newObject:       func() object { return &corev1.Namespace{} },
	build: func(u *unit, _ *Object) object {
		spec := u.spec
		ns := namespaceEnforcing(spec.PodSecurity)
		if spec.NetworkIsolation {
			ns.Labels[v1alpha1.NetworkIsolationLabel] = "true"
		}
		if len(spec.NamespaceAnnotations) > 0 {
			ns.Annotations = maps.Clone(spec.NamespaceAnnotations)
		}
		if _, ok := spec.NamespaceAnnotations[v1alpha1.NodeSelectorAnnotation]; ok {
			ns.Labels[v1alpha1.NodeSelectorLabel] = "true"
		}
		return ns
	},
	decode: func(o *Object) (object, error) {
		ns := &corev1.Namespace{}
		ns.Labels = o.Metadata.Labels
		ns.Annotations = o.Metadata.Annotations
		return ns, nil
	},
	// Not QuotasAnnotation: the LimitRange carries it (quotas.go). One
	// answered here by an earlier version is removed by the engine.
	content: func(obj object) object {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: owned(obj.GetLabels(), ownedNamespaceLabels)}}
		// Annotations only when there are some: a namespace without them
		// compares (and is kept) as it always was.
		if a := owned(obj.GetAnnotations(), ownedNamespaceAnnotations); len(a) > 0 {
			ns.Annotations = a
		}
		return ns
	},
	outOfDateMessage: func(ref string, observed, desired object) string {
		msg := fmt.Sprintf("namespace %s has labels %s, updating to %s", ref, describeLabels(observed.GetLabels()), describeLabels(desired.GetLabels()))
		if o, d := describeAnnotations(observed.GetAnnotations()), describeAnnotations(desired.GetAnnotations()); o != d {
			msg += fmt.Sprintf("; annotations %s, updating to %s", o, d)
		}
		return msg
	},
	// Without an observed namespace an invalid spec gets the default one.
	keptWithout: func(*unit) object { return namespaceEnforcing(DefaultPodSecurity) },
	ready: func(u *unit) string {
		return fmt.Sprintf("namespace %s is Active (pod security %s)", u.namespace, u.spec.PodSecurity)
	},
}

func namespaceEnforcing(level string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		PodSecurityEnforceLabel:        level,
		PodSecurityEnforceVersionLabel: "latest",
	}}}
}

// namespaceConflict says who holds a unit's namespace when the engine
// shows it only as a related object (the customize hook asks for it by name)
// and another owner controls it: the engine never adopts it, and without
// this the TeamSpace would wait in silence.
func (o *observation) namespaceConflict(u *unit) (string, bool) {
	foreign, holder := o.foreign(namespaceType, u)
	if foreign == nil {
		return "", false
	}
	if isTerminating(foreign) {
		return fmt.Sprintf("namespace %s %s and is still terminating; this TeamSpace gets its namespace once it is gone", u.namespace, holder), true
	}
	if u.entry != "" {
		return fmt.Sprintf("namespace %s already exists and %s; it is never adopted: delete it, or rename the entry", u.namespace, holder), true
	}
	return fmt.Sprintf("namespace %s already exists and %s; it is never adopted: delete it, or use another TeamSpace name", u.namespace, holder), true
}

// namespaceState is where the observed namespace is in its life: the one
// place Sync reads it from (which children it asks for, whether the
// TeamSpace is still being created, why it is not Ready).
type namespaceState int

const (
	namespaceMissing namespaceState = iota
	// namespaceTerminating: deleted (deletionTimestamp) or in phase
	// Terminating; nothing can be created in it.
	namespaceTerminating
	// namespaceNotActive: neither terminating nor Active (a phase the
	// API server has not filled yet); children may be created in it, but
	// the TeamSpace is not Ready.
	namespaceNotActive
	namespaceActive
)

// describeLabels prints the labels the hook owns on the namespace (the
// TeamSpace label, the enforced Pod Security level and version, the
// isolation mark) in a fixed
// order, so that a hand edit of any of them is named in the status.
func describeLabels(labels map[string]string) string {
	get := func(k string) string {
		if v, ok := labels[k]; ok {
			return v
		}
		return "<unset>"
	}
	s := fmt.Sprintf("%s=%s, enforce=%s, enforce-version=%s, network-isolation=%s", v1alpha1.TeamSpaceLabel, get(v1alpha1.TeamSpaceLabel), get(PodSecurityEnforceLabel), get(PodSecurityEnforceVersionLabel), get(v1alpha1.NetworkIsolationLabel))
	// Named only where it is set: most namespaces never have it.
	if v, ok := labels[v1alpha1.NodeSelectorLabel]; ok {
		s += ", node-selector=" + v
	}
	return s
}

// owned is m reduced to keys (an empty map when none is there).
func owned(m map[string]string, keys []string) map[string]string {
	out := map[string]string{}
	for _, k := range keys {
		if v, ok := m[k]; ok {
			out[k] = v
		}
	}
	return out
}

// describeAnnotations prints the owned annotations of a namespace
// (allow.go), "none" when it has none of them.
func describeAnnotations(annotations map[string]string) string {
	var parts []string
	for _, k := range ownedNamespaceAnnotations {
		if v, ok := annotations[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// isTerminating reports whether a namespace is being deleted.
func isTerminating(ns *Object) bool {
	return ns.Metadata.DeletionTimestamp != nil || ns.Status.Phase == "Terminating"
}

// ownedBy reports whether obj's controller reference is the TeamSpace uid.
func ownedBy(obj *Object, uid string) bool {
	for _, ref := range obj.Metadata.OwnerReferences {
		if ref.Controller != nil && *ref.Controller && string(ref.UID) == uid {
			return true
		}
	}
	return false
}
