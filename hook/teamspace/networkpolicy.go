package teamspace

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// NetworkPolicyName is the policy that admits ingress to the team's pods
// only from pods of the same namespace.
const NetworkPolicyName = "team-isolation"

// networkPolicyType is team-isolation, asked for while spec.networkIsolation
// is true (its default): it selects every pod of the namespace and allows
// ingress only from pods of the same namespace (a podSelector peer without
// a namespaceSelector means this namespace). Egress is not restricted.
var networkPolicyType = &childType{
	apiVersion:      networkingv1.SchemeGroupVersion.String(),
	kind:            "NetworkPolicy",
	name:            func(*unit) string { return NetworkPolicyName },
	namespaced:      true,
	optional:        true,
	pendingReason:   v1alpha1.ReasonNetworkPolicyPending,
	outOfDateReason: v1alpha1.ReasonNetworkPolicyOutOfDate,
	newObject:       func() object { return &networkingv1.NetworkPolicy{} },
	build: func(u *unit, _ *Object) object {
		if !u.spec.NetworkIsolation {
			return nil
		}
		from := []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}
		// The team's other namespaces, by the name label the API server
		// sets on every namespace and nobody can change: a label of the
		// platform's own could be written on a namespace by whoever may
		// create one.
		if others := u.otherTeamNamespaces(); len(others) > 0 {
			from = append(from, networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpIn, Values: others}},
			}})
		}
		return &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: from}},
		}}
	},
	decode: func(o *Object) (object, error) {
		np := &networkingv1.NetworkPolicy{}
		np.Labels = o.Metadata.Labels
		return np, decodeRaw(o.Spec, &np.Spec)
	},
	// Egress rules others add are theirs: the engine keeps them.
	content: func(obj object) object {
		s := obj.(*networkingv1.NetworkPolicy).Spec
		return &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{PodSelector: s.PodSelector, PolicyTypes: s.PolicyTypes, Ingress: s.Ingress}}
	},
	ready: func(u *unit) string {
		switch {
		case !u.spec.NetworkIsolation:
			return ""
		case len(u.spec.Namespaces) > 0:
			return ", ingress only from the team's namespaces"
		}
		return ", ingress only from the namespace"
	},
}
