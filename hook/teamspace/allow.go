package teamspace

import (
	"fmt"
	"maps"
	"slices"
	"strings"

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

// checkGateway checks a Gateway named <namespace>/<name> or <namespace>/*.
func checkGateway(g string) []string {
	ns, name, ok := strings.Cut(g, "/")
	if !ok {
		return []string{"must be <namespace>/<name> or <namespace>/*"}
	}
	problems := validation.IsDNS1123Label(ns)
	if name != "*" {
		problems = append(problems, validation.IsDNS1123Subdomain(name)...)
	}
	return problems
}

// checkAllowAndNodes checks spec.allow and spec.nodeSelector and returns
// the namespace annotations they make, nil when neither sets anything.
func checkAllowAndNodes(allow *v1alpha1.Allow, nodeSelector map[string]v1alpha1.LabelValue) (map[string]string, []string) {
	annotations := map[string]string{}
	var problems []string
	if allow != nil {
		for _, l := range allowLists {
			entries := l.entries(allow)
			for i, e := range entries {
				if errs := l.check(e); len(errs) > 0 {
					problems = append(problems, fmt.Sprintf("spec.allow.%s[%d] %q: %s", l.field, i, e, strings.Join(errs, "; ")))
				} else if slices.Contains(entries[:i], e) {
					problems = append(problems, fmt.Sprintf("spec.allow.%s[%d] %q: named twice", l.field, i, e))
				}
			}
			if len(entries) > 0 {
				annotations[v1alpha1.AllowedAnnotationPrefix+l.annotation] = strings.Join(entries, ",")
			}
		}
	}
	var pairs []string
	for _, k := range slices.Sorted(maps.Keys(nodeSelector)) {
		v := string(nodeSelector[k])
		if errs := append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...); len(errs) > 0 {
			problems = append(problems, fmt.Sprintf("spec.nodeSelector.%s %q: %s", k, v, strings.Join(errs, "; ")))
			continue
		}
		pairs = append(pairs, k+"="+v)
	}
	if len(pairs) > 0 {
		annotations[v1alpha1.NodeSelectorAnnotation] = strings.Join(pairs, ",")
	}
	if len(annotations) == 0 {
		return nil, problems
	}
	return annotations, problems
}
