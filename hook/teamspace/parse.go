package teamspace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// The parse stage: a TeamSpace's spec read into a Spec, with every check
// of it in this file (the schema's rules again, for a spec that bypassed
// validation, and what the schema cannot say), each field named where it
// is wrong. The child types build from a Spec that passed.

// ParseSpec reads the raw spec through the API's type,
// v1alpha1.TeamSpaceSpec, and checks it the way crd.yaml does, plus what the
// schema cannot say, returning the values in canonical form. It is needed
// although the API server validates too: validation can be bypassed (an
// older CRD, a direct etcd write), and then the hook must say what is wrong
// instead of acting on it. Every problem is named, each with its field.
func ParseSpec(raw json.RawMessage) (Spec, error) {
	var fields map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return Spec{}, &SpecError{[]string{"spec is missing"}}
	}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Spec{}, &SpecError{[]string{"spec must be an object"}}
	}
	// A field of the wrong type is named by decodeSpec and then left out
	// (bad): it is not checked again as the zero value it decoded to.
	api, bad, problems := decodeSpec(fields)
	var spec Spec
	var err error
	if !bad["pods"] {
		if spec.Pods, err = checkPods(api.Pods, present(fields, "pods"), fields["pods"]); err != nil {
			problems = append(problems, "spec.pods "+err.Error())
		}
	}
	spec.CPU = DefaultCPU
	if bad["cpu"] {
		spec.CPU = ""
	} else if present(fields, "cpu") {
		if spec.CPU, err = CanonicalQuantity(api.CPU); err != nil {
			problems = append(problems, "spec.cpu "+err.Error())
		}
	}
	memoryOK := !bad["memory"]
	if memoryOK && present(fields, "memory") {
		if spec.Memory, err = CanonicalQuantity(api.Memory); err != nil {
			problems = append(problems, "spec.memory "+err.Error())
			memoryOK = false
		}
	}
	// The defaults are checked against valid totals only.
	if memoryOK && !bad["defaults"] && spec.Pods != "" && spec.CPU != "" {
		problems = append(problems, parseDefaults(api.Defaults, &spec)...)
	}
	owners, ownerProblems := checkOwners(api.Owners)
	spec.Owners, spec.ReservedOwners = withoutReserved(owners)
	problems = append(problems, ownerProblems...)
	spec.PodSecurity = DefaultPodSecurity
	if present(fields, "podSecurity") && !bad["podSecurity"] {
		spec.PodSecurity = string(api.PodSecurity)
		if !slices.Contains(v1alpha1.PodSecurityLevels, api.PodSecurity) {
			problems = append(problems, "spec.podSecurity "+wrongType["podSecurity"]+", got "+string(fields["podSecurity"]))
		}
	}
	spec.NetworkIsolation = api.NetworkIsolation == nil || *api.NetworkIsolation
	if present(fields, "ephemeralStorage") && !bad["ephemeralStorage"] {
		if err := checkEphemeralStorage(api.EphemeralStorage, &spec); err != nil {
			problems = append(problems, "spec.ephemeralStorage "+err.Error())
		}
	}
	objects, objectProblems := checkObjects(api.Objects, fields["objects"])
	spec.Objects = objects
	problems = append(problems, objectProblems...)
	annotations, allowProblems := checkAllowAndNodes(api.Allow, api.NodeSelector)
	spec.NamespaceAnnotations = annotations
	problems = append(problems, allowProblems...)
	// The shares are summed against totals that are valid.
	if len(problems) == 0 && !bad["namespaces"] {
		shares, shareProblems := checkNamespaces(api.Namespaces, spec)
		spec.Namespaces = shares
		problems = append(problems, shareProblems...)
	}
	if len(problems) > 0 {
		return Spec{}, &SpecError{problems}
	}
	// The container defaults of the whole spec: team-<name>'s without
	// entries (units gives each namespace its own, by the same rule).
	spec.DefaultRequestCPU, spec.DefaultRequestMemory, spec.DefaultEphemeralStorage = unitDefaults(spec, spec)
	return spec, nil
}

// checkPods checks spec.pods (raw for the message) and returns it as the
// quota writes it.
func checkPods(pods int32, set bool, raw json.RawMessage) (string, error) {
	if !set {
		return "", fmt.Errorf("is required (an integer from %d to %d)", MinPods, MaxPods)
	}
	if pods < MinPods || pods > MaxPods {
		return "", fmt.Errorf("must be from %d to %d, got %s", MinPods, MaxPods, bytes.TrimSpace(raw))
	}
	return strconv.Itoa(int(pods)), nil
}

// checkOwners checks spec.owners as crd.yaml does: a known kind, a name,
// a namespace for a ServiceAccount only, no name twice. Names must be
// unique even across kinds: Metacontroller merges a list whose items all
// have a "name" as a map keyed by it, so a User and a Group of the same
// name would collapse into one subject.
func checkOwners(owners []Owner) ([]Owner, []string) {
	var problems []string
	if len(owners) > MaxOwners {
		problems = append(problems, fmt.Sprintf("spec.owners has %d entries, at most %d", len(owners), MaxOwners))
	}
	seen := map[string]int{}
	for i, o := range owners {
		field := fmt.Sprintf("spec.owners[%d]", i)
		switch o.Kind {
		case "User", "Group":
			if o.Namespace != "" {
				problems = append(problems, fmt.Sprintf("%s.namespace is only allowed for a ServiceAccount, not a %s", field, o.Kind))
			}
		case "ServiceAccount":
			if o.Namespace == "" {
				problems = append(problems, field+".namespace is required for a ServiceAccount")
			} else if errs := validation.IsDNS1123Label(o.Namespace); len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s.namespace %q is not a namespace name: %s", field, o.Namespace, errs[0]))
			}
			if errs := validation.IsDNS1123Subdomain(o.Name); o.Name != "" && len(errs) > 0 {
				problems = append(problems, fmt.Sprintf("%s.name %q is not a ServiceAccount name: %s", field, o.Name, errs[0]))
			}
		default:
			problems = append(problems, fmt.Sprintf("%s.kind must be one of User, Group, ServiceAccount, got %q", field, o.Kind))
		}
		if o.Name == "" {
			problems = append(problems, field+".name must not be empty")
		}
		if j, dup := seen[o.Name]; dup && o.Name != "" {
			problems = append(problems, fmt.Sprintf("%s.name %q is already spec.owners[%d]'s (each name once)", field, o.Name, j))
		} else {
			seen[o.Name] = i
		}
	}
	return owners, problems
}

// ReservedNamespaces are namespaces whose ServiceAccounts are never owners,
// beside every kube-* namespace: the platform's own.
var ReservedNamespaces = []string{v1alpha1.SystemNamespace}

// reservedOwner says why an owner is never bound ("" if it may be): the
// API server's own users and groups (system:unauthenticated,
// system:authenticated, system:masters, system:serviceaccounts:...,
// system:node:...) would hand the namespace to everyone, to every
// ServiceAccount or to the cluster's components, and the ServiceAccounts of
// kube-* and the platform's namespaces are the cluster's and the
// platform's. hack/deploy/limits.yaml refuses them at admission (unless the
// writer is exempt); the hook skips any that is stored all the same.
// ReservedOwner reports whether owner o is never bound (reservedOwner):
// naming it in spec.owners gives nobody anything.
func ReservedOwner(o Owner) bool { return reservedOwner(o) != "" }

func reservedOwner(o Owner) string {
	switch {
	case (o.Kind == "User" || o.Kind == "Group") && strings.HasPrefix(o.Name, "system:"):
		return "system: users and groups are the API server's own"
	case o.Kind == rbacv1.ServiceAccountKind && (strings.HasPrefix(o.Namespace, "kube-") || slices.Contains(ReservedNamespaces, o.Namespace)):
		return "ServiceAccounts of kube-* and " + strings.Join(ReservedNamespaces, ", ") + " are the cluster's and the platform's"
	}
	return ""
}

// withoutReserved splits owners into those that are bound and a
// description of each reserved one.
func withoutReserved(owners []Owner) ([]Owner, []string) {
	var bound []Owner
	var reserved []string
	for i, o := range owners {
		if why := reservedOwner(o); why != "" {
			who := o.Kind + " " + o.Name
			if o.Namespace != "" {
				who = o.Kind + " " + o.Namespace + "/" + o.Name
			}
			reserved = append(reserved, fmt.Sprintf("spec.owners[%d] (%s: %s)", i, who, why))
			continue
		}
		bound = append(bound, o)
	}
	return bound, reserved
}

// parseDefaults reads spec.defaults into spec's cpuDefault and
// memoryDefault: each override, if given, at most the namespace's total.
// The defaults themselves are unitDefaults' (unit.go).
func parseDefaults(defaults *v1alpha1.Defaults, spec *Spec) []string {
	var d v1alpha1.Defaults
	if defaults != nil {
		d = *defaults
	}
	var problems []string
	cpu := resource.MustParse(spec.CPU)
	if d.CPU != nil {
		c, err := overrideWithin(*d.CPU, cpu, "spec.cpu")
		if err != nil {
			problems = append(problems, "spec.defaults.cpu "+err.Error())
		}
		spec.cpuDefault = c
	}
	if spec.Memory == "" {
		if d.Memory != nil {
			problems = append(problems, "spec.defaults.memory needs spec.memory (without it no memory is limited)")
		}
		return problems
	}
	mem := resource.MustParse(spec.Memory)
	if d.Memory != nil {
		m, err := overrideWithin(*d.Memory, mem, "spec.memory")
		if err != nil {
			problems = append(problems, "spec.defaults.memory "+err.Error())
		}
		spec.memoryDefault = m
	}
	return problems
}

// overrideWithin checks a spec.defaults value: a positive quantity not above
// the namespace's total.
func overrideWithin(s string, total resource.Quantity, totalField string) (string, error) {
	c, err := CanonicalQuantity(s)
	if err != nil {
		return "", err
	}
	if q := resource.MustParse(c); q.Cmp(total) > 0 {
		return "", fmt.Errorf("%q must not exceed %s (%s)", s, totalField, total.String())
	}
	return c, nil
}

// checkObjects checks the optional spec.objects (raw for the messages): nil
// when unset or empty.
func checkObjects(objects map[string]v1alpha1.ObjectCount, raw json.RawMessage) (map[corev1.ResourceName]int64, []string) {
	var rawValues map[string]json.RawMessage
	_ = json.Unmarshal(raw, &rawValues) // decodeSpec read it
	var names []string
	for _, c := range objectCounts {
		names = append(names, string(c.name))
	}
	keys := make([]string, 0, len(objects))
	for k := range objects {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	counts := map[corev1.ResourceName]int64{}
	var problems []string
	for _, k := range keys {
		i := slices.IndexFunc(objectCounts, func(c objectCount) bool { return string(c.name) == k })
		if i < 0 {
			problems = append(problems, fmt.Sprintf("spec.objects: %q is not a count the quota keeps (want %s)", k, strings.Join(names, ", ")))
			continue
		}
		n := int64(objects[k])
		if n < 0 || n > MaxObjectCount {
			problems = append(problems, fmt.Sprintf("spec.objects.%s %s, got %s", k, wrongType["objects.*"], bytes.TrimSpace(rawValues[k])))
			continue
		}
		if c := objectCounts[i]; n < c.min {
			problems = append(problems, fmt.Sprintf("spec.objects.%s must be at least %d (%s), got %d", k, c.min, c.why, n))
			continue
		}
		counts[objectCounts[i].name] = n
	}
	if len(problems) > 0 || len(counts) == 0 {
		return nil, problems
	}
	return counts, nil
}

// checkEphemeralStorage reads the optional spec.ephemeralStorage into
// spec's EphemeralStorage.
func checkEphemeralStorage(s string, spec *Spec) error {
	c, err := CanonicalQuantity(s)
	if err != nil {
		return err
	}
	spec.EphemeralStorage = c
	return nil
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

// checkNamespaces checks spec.namespaces against the spec's totals (spec
// holds those already checked; a total that was invalid is not summed
// against) and returns the shares in spec order.
func checkNamespaces(entries []v1alpha1.NamespaceEntry, spec Spec) ([]NamespaceShare, []string) {
	if len(entries) == 0 {
		return nil, nil
	}
	var problems []string
	if len(entries) > v1alpha1.MaxNamespaces {
		problems = append(problems, fmt.Sprintf("spec.namespaces: %d entries, at most %d", len(entries), v1alpha1.MaxNamespaces))
	}
	shares := make([]NamespaceShare, 0, len(entries))
	seen, adopted := map[string]bool{}, map[string]bool{}
	for i, e := range entries {
		at := fmt.Sprintf("spec.namespaces[%d]", i)
		s := NamespaceShare{Name: e.Name}
		if errs := validation.IsDNS1123Label(e.Name); len(errs) > 0 || strings.Contains(e.Name, v1alpha1.NamespaceSeparator) || len(e.Name) > v1alpha1.MaxNamespacePartsLength-1 {
			problems = append(problems, fmt.Sprintf("%s.name %q must be a DNS-1123 label of at most %d characters without %q", at, e.Name, v1alpha1.MaxNamespacePartsLength-1, v1alpha1.NamespaceSeparator))
		} else if seen[e.Name] {
			problems = append(problems, fmt.Sprintf("%s.name %q is named twice", at, e.Name))
		}
		seen[e.Name] = true
		if e.Adopt != nil {
			if problem := adoptable(e.Adopt.Namespace); problem != "" {
				problems = append(problems, fmt.Sprintf("%s.adopt.namespace %q %s", at, e.Adopt.Namespace, problem))
			} else if adopted[e.Adopt.Namespace] {
				problems = append(problems, fmt.Sprintf("%s.adopt.namespace %q is adopted twice", at, e.Adopt.Namespace))
			}
			adopted[e.Adopt.Namespace] = true
			s.Adopt, s.Enforce = e.Adopt.Namespace, e.Adopt.Enforce
		}
		if e.Pods < 1 || e.Pods > v1alpha1.MaxPods-1 {
			problems = append(problems, fmt.Sprintf("%s.pods must be from 1 to %d, got %d", at, v1alpha1.MaxPods-1, e.Pods))
		} else {
			s.Pods = strconv.Itoa(int(e.Pods))
		}
		var err error
		if s.CPU, err = CanonicalQuantity(e.CPU); err != nil {
			problems = append(problems, at+".cpu "+err.Error())
		}
		for _, q := range []struct {
			field, value, total string
			into                *string
		}{
			{"memory", e.Memory, spec.Memory, &s.Memory},
			{"ephemeralStorage", e.EphemeralStorage, spec.EphemeralStorage, &s.EphemeralStorage},
		} {
			switch {
			case q.value != "" && q.total == "":
				problems = append(problems, fmt.Sprintf("%s.%s is a share of spec.%s, which is unset", at, q.field, q.field))
			case q.value != "":
				if *q.into, err = CanonicalQuantity(q.value); err != nil {
					problems = append(problems, at+"."+q.field+" "+err.Error())
				}
			}
		}
		if len(e.Objects) > 0 {
			s.Objects = map[corev1.ResourceName]int64{}
		}
		for _, k := range slices.Sorted(maps.Keys(e.Objects)) {
			n := int64(e.Objects[k])
			i := slices.IndexFunc(objectCounts, func(c objectCount) bool { return string(c.name) == k })
			if i >= 0 && objectCounts[i].whole {
				problems = append(problems, fmt.Sprintf("%s.objects.%s is not divided: every namespace holds spec.objects.%s", at, k, k))
				continue
			}
			if _, counted := spec.Objects[corev1.ResourceName(k)]; i < 0 || !counted {
				problems = append(problems, fmt.Sprintf("%s.objects.%s is a share of a count spec.objects does not keep", at, k))
				continue
			}
			// The namespace's own objects come on top of its share.
			if n < 0 || n > MaxObjectCount {
				problems = append(problems, fmt.Sprintf("%s.objects.%s must be from 0 to %d, got %d", at, k, MaxObjectCount, n))
				continue
			}
			s.Objects[corev1.ResourceName(k)] = n
		}
		shares = append(shares, s)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return shares, checkShareSums(shares, spec)
}

// checkShareSums says where the shares add up to the totals or more:
// team-<name> keeps the rest, at least one pod and some of each quantity,
// and the objects it holds itself (a ConfigMap, two quotas).
func checkShareSums(shares []NamespaceShare, spec Spec) []string {
	var problems []string
	// The sum of the shares entries name ("" is none).
	sum := func(get func(NamespaceShare) string) resource.Quantity {
		var total resource.Quantity
		for _, s := range shares {
			if v := get(s); v != "" {
				total.Add(resource.MustParse(v))
			}
		}
		return total
	}
	for _, q := range []struct {
		field, total string
		get          func(NamespaceShare) string
	}{
		{"pods", spec.Pods, func(s NamespaceShare) string { return s.Pods }},
		{"cpu", spec.CPU, func(s NamespaceShare) string { return s.CPU }},
		{"memory", spec.Memory, func(s NamespaceShare) string { return s.Memory }},
		{"ephemeralStorage", spec.EphemeralStorage, func(s NamespaceShare) string { return s.EphemeralStorage }},
	} {
		if q.total == "" {
			continue
		}
		if got := sum(q.get); got.Cmp(resource.MustParse(q.total)) >= 0 {
			problems = append(problems, fmt.Sprintf("spec.namespaces: the namespaces' %s add up to %s, not less than spec.%s %s (team-<name> keeps the rest)", q.field, got.String(), q.field, q.total))
		}
	}
	for _, c := range objectCounts {
		total, ok := spec.Objects[c.name]
		if !ok {
			continue
		}
		// team-<name> holds the kind's minimum itself (an extra
		// namespace's own come on top of its share).
		var got int64
		for _, s := range shares {
			got += s.Objects[c.name]
		}
		if got > total-c.min {
			problems = append(problems, fmt.Sprintf("spec.namespaces: the namespaces' objects.%s add up to %d, more than spec.objects.%s %d less the %d team-<name> holds itself", c.name, got, c.name, total, c.min))
		}
	}
	return problems
}

// checkNamespaceNames says which entries would make a namespace name
// longer than a DNS-1123 label with this TeamSpace's name.
func checkNamespaceNames(teamspace string, shares []NamespaceShare) []string {
	var problems []string
	for i, s := range shares {
		if n := ExtraNamespaceName(teamspace, s.Name); s.Adopt == "" && len(n) > validation.DNS1123LabelMaxLength {
			problems = append(problems, fmt.Sprintf("spec.namespaces[%d].name: namespace %s would be %d characters, at most %d (the TeamSpace's name and the entry's together at most %d)", i, n, len(n), validation.DNS1123LabelMaxLength, v1alpha1.MaxNamespacePartsLength))
		}
	}
	return problems
}
