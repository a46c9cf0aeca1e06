package teamspace

import (
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// What the platform team gives one TeamSpace beyond its limits
// (spec.allow) and the nodes its pods run on (spec.nodeSelector) reach
// the API server's policies (hack/deploy/team-use.yaml) as annotations of
// the team's namespace: a policy cannot read the TeamSpace, it can read
// the namespace, which owners cannot change. Each is set only while its
// field is, so a TeamSpace without them answers the namespace it always
// did (the annotations' names: package v1alpha1).

// allowLists are spec.allow's lists: field name, annotation suffix, and
// how an entry must look.
var allowLists = []struct {
	field, annotation string
	entries           func(*v1alpha1.Allow) []string
	check             func(string) []string
}{
	{"storageClasses", "storage-classes", func(a *v1alpha1.Allow) []string { return names(a.StorageClasses) }, validation.IsDNS1123Subdomain},
	{"priorityClasses", "priority-classes", func(a *v1alpha1.Allow) []string { return names(a.PriorityClasses) }, validation.IsDNS1123Subdomain},
	{"runtimeClasses", "runtime-classes", func(a *v1alpha1.Allow) []string { return names(a.RuntimeClasses) }, validation.IsDNS1123Subdomain},
	{"ingressClasses", "ingress-classes", func(a *v1alpha1.Allow) []string { return names(a.IngressClasses) }, validation.IsDNS1123Subdomain},
	{"gateways", "gateways", func(a *v1alpha1.Allow) []string { return names(a.Gateways) }, checkGateway},
}

// ownedNamespaceAnnotations are the namespace's annotations the hook owns.
var ownedNamespaceAnnotations = func() []string {
	keys := []string{v1alpha1.NodeSelectorAnnotation}
	for _, l := range allowLists {
		keys = append(keys, v1alpha1.AllowedAnnotationPrefix+l.annotation)
	}
	slices.Sort(keys)
	return keys
}()

func names[T ~string](list []T) []string {
	out := make([]string, len(list))
	for i, n := range list {
		out[i] = string(n)
	}
	return out
}
