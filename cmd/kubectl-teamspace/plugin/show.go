package plugin

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// Show is what `show NAME` answers: one TeamSpace at a glance.
type Show struct {
	Name        string   `json:"name"`
	RequestedBy string   `json:"requestedBy,omitempty"`
	Owners      []string `json:"owners"`
	// Ready is the condition's status and reason; Meaning says it in plain
	// words and what to do; Message is the hook's own.
	Ready   string `json:"ready"`
	Meaning string `json:"meaning"`
	Message string `json:"message,omitempty"`
	// Namespaces: each with its quota's use, live where the caller may
	// read the quota, else as the TeamSpace's status last reported it
	// (an older hook's status: the current one keeps no figures there).
	Namespaces []NamespaceUse `json:"namespaces"`
}

// NamespaceUse is a namespace's use of its share.
type NamespaceUse struct {
	Name  string `json:"name"`
	State string `json:"state,omitempty"`
	// Source: "live" (the quota read now) or "status" (the TeamSpace's).
	Source    string     `json:"source"`
	Resources []Resource `json:"resources"`
}

// Resource is one quota line: used of hard.
type Resource struct {
	Name string `json:"name"`
	Used string `json:"used"`
	Hard string `json:"hard"`
}

// meanings are the Ready reasons in plain words, with what to do.
var meanings = map[string]string{
	v1alpha1.ReasonReady:               "everything is as asked",
	v1alpha1.ReasonCreating:            "being created; wait a few seconds",
	v1alpha1.ReasonInvalidSpec:         "the spec is invalid and nothing changes until it is fixed (what exists is kept); fix the fields the message names",
	v1alpha1.ReasonNamespaceConflict:   "a namespace of this name is someone else's; ask the platform team",
	v1alpha1.ReasonClusterRoleConflict: "its owners' ClusterRole name is taken by someone else; ask the platform team",
	v1alpha1.ReasonOwnerReserved:       "spec.owners names a reserved subject, which is not bound; take it out",
	v1alpha1.ReasonArchivePending:      "waiting for the archive record to be stored; the platform team must look at the archive",
	v1alpha1.ReasonDeleting:            "being deleted",
	v1alpha1.ReasonChildRemoving:       "something no longer asked for is being removed; wait",
	"NamespaceKept":                    "a namespace was dropped from spec.namespaces and is kept with everything in it until its removal is confirmed (annotation platform.labhub.io/remove-namespaces)",
	"NamespaceRemoving":                "a namespace whose removal was confirmed is archived and being deleted",
	"NamespaceTerminating":             "the namespace is being deleted; it comes back",
	"NamespaceNotActive":               "the namespace is not Active yet; wait",
	"RequesterAllowanceExceeded":       "its requester holds more than the platform's allowance: nothing new is made until one of theirs goes or the allowance is raised",
	"LimitsInvalid":                    "the platform's limits cannot be read; the platform team must fix them",
}

// meaning is a reason in plain words: Pending and OutOfDate reasons of any
// child say the same thing.
func meaning(reason string) string {
	if m, ok := meanings[reason]; ok {
		return m
	}
	switch {
	case strings.HasSuffix(reason, "Pending"):
		return "something it holds is being made (or made again after a deletion); wait a second"
	case strings.HasSuffix(reason, "OutOfDate"):
		return "something it holds differs from the spec (a change, or a hand edit being undone); wait a second"
	case reason == "":
		return "no status yet: the engine has not answered (is it running?)"
	}
	return "see the message"
}

func show(ctx context.Context, c *clients, name string) (*Show, error) {
	dyn, err := dynamic.NewForConfig(c.rest)
	if err != nil {
		return nil, err
	}
	ts, err := dyn.Resource(teamSpaces).Get(ctx, name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, fmt.Errorf("TeamSpace %s does not exist (kubectl teamspace mine lists yours)", name)
	case apierrors.IsForbidden(err):
		return nil, fmt.Errorf("TeamSpace %s is not yours to read, or does not exist (kubectl teamspace mine lists yours)", name)
	case err != nil:
		return nil, fmt.Errorf("reading TeamSpace %s: %v", name, err)
	}
	out := &Show{Name: name, RequestedBy: ts.GetAnnotations()[v1alpha1.RequestedByAnnotation], Owners: []string{}, Namespaces: []NamespaceUse{}}
	owners, _, _ := unstructured.NestedSlice(ts.Object, "spec", "owners")
	for _, o := range owners {
		m, _ := o.(map[string]any)
		s := fmt.Sprintf("%v %v", m["kind"], m["name"])
		if ns, ok := m["namespace"]; ok {
			s = fmt.Sprintf("%v %v/%v", m["kind"], ns, m["name"])
		}
		out.Owners = append(out.Owners, s)
	}
	reason := ""
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, cnd := range conds {
		m, _ := cnd.(map[string]any)
		if m["type"] == "Ready" {
			reason, _ = m["reason"].(string)
			out.Ready = fmt.Sprintf("%v %v", m["status"], reason)
			out.Message, _ = m["message"].(string)
		}
	}
	out.Meaning = meaning(reason)
	// Without a status that names them (none yet, or an older hook's),
	// team-<name> is tried: its quota shows if it is there and readable.
	listed := namespacesOf(ts)
	guessed := len(listed) == 0
	if guessed {
		listed = []statusNamespace{{name: teamspace.NamespaceName(name)}}
	}
	for _, u := range listed {
		nu := NamespaceUse{Name: u.name, State: u.state, Source: "status", Resources: u.resources}
		q, err := c.kube.CoreV1().ResourceQuotas(u.name).Get(ctx, teamspace.QuotaName, metav1.GetOptions{})
		switch {
		case err == nil:
			nu.Source, nu.Resources = "live", quotaResources(q.Status.Used, q.Status.Hard)
		case guessed:
			continue
		}
		out.Namespaces = append(out.Namespaces, nu)
	}
	return out, nil
}

type statusNamespace struct {
	name, state string
	resources   []Resource
}

// namespacesOf are the TeamSpace's namespaces as its status has them:
// status.namespaces, or status.namespace with status.usage. A status of
// an older hook without them gives none.
func namespacesOf(ts *unstructured.Unstructured) []statusNamespace {
	usage := func(m map[string]any) []Resource {
		var out []Resource
		for _, k := range []struct{ key, name string }{{"pods", "pods"}, {"cpu", "requests.cpu"}, {"memory", "requests.memory"}} {
			if v, ok := m[k.key].(string); ok {
				used, hard, _ := strings.Cut(v, "/")
				out = append(out, Resource{Name: k.name, Used: used, Hard: hard})
			}
		}
		return out
	}
	var out []statusNamespace
	list, _, _ := unstructured.NestedSlice(ts.Object, "status", "namespaces")
	for _, n := range list {
		m, _ := n.(map[string]any)
		name, _ := m["name"].(string)
		state, _ := m["state"].(string)
		u, _ := m["usage"].(map[string]any)
		out = append(out, statusNamespace{name, state, usage(u)})
	}
	if len(out) == 0 {
		if ns, _, _ := unstructured.NestedString(ts.Object, "status", "namespace"); ns != "" {
			u, _, _ := unstructured.NestedMap(ts.Object, "status", "usage")
			out = append(out, statusNamespace{name: ns, resources: usage(u)})
		}
	}
	return out
}

// quotaResources are a quota's lines, pods, cpu and memory first.
func quotaResources(used, hard corev1.ResourceList) []Resource {
	var out []Resource
	for _, k := range []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory} {
		h, ok := hard[k]
		if !ok {
			continue
		}
		u := used[k]
		out = append(out, Resource{Name: string(k), Used: u.String(), Hard: h.String()})
	}
	return out
}

// bar draws used of hard in width cells, "?" where either is unknown.
func bar(used, hard string, width int) string {
	// "-" is the status' "not reported yet" (ParseQuantity takes it as 0).
	u, errU := resource.ParseQuantity(used)
	h, errH := resource.ParseQuantity(hard)
	if used == "-" || hard == "-" || errU != nil || errH != nil || h.IsZero() {
		return "[" + strings.Repeat("?", width) + "]"
	}
	filled := int(float64(width)*u.AsApproximateFloat64()/h.AsApproximateFloat64() + 0.5)
	filled = max(0, min(width, filled))
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

func printShow(s *Show, output string, out io.Writer) error {
	if output != "table" {
		return printStructured(s, output, out)
	}
	fmt.Fprintf(out, "TeamSpace %s\n", s.Name)
	if s.RequestedBy != "" {
		fmt.Fprintf(out, "Requested by: %s\n", s.RequestedBy)
	}
	owners := "none"
	if len(s.Owners) > 0 {
		owners = strings.Join(s.Owners, ", ")
	}
	fmt.Fprintf(out, "Owners:       %s\n", owners)
	fmt.Fprintf(out, "Ready:        %s: %s\n", dash(s.Ready), s.Meaning)
	if s.Message != "" && !strings.HasPrefix(s.Ready, "True") {
		fmt.Fprintf(out, "              %s\n", s.Message)
	}
	if len(s.Namespaces) == 0 {
		fmt.Fprintln(out, "No namespace yet.")
	}
	for _, n := range s.Namespaces {
		state := ""
		if n.State != "" {
			state = " (" + n.State + ")"
		}
		from := ""
		switch {
		case n.Source == "status" && len(n.Resources) == 0:
			// The status holds no figures (a hook of issue #54 on: kept
			// there, they cost a sync per pod event).
			from = ": its quota is not yours to read (an owner sees it here)"
		case n.Source == "status":
			from = ", as last reported (its quota is not yours to read)"
		}
		fmt.Fprintf(out, "Namespace %s%s%s\n", n.Name, state, from)
		for _, r := range n.Resources {
			fmt.Fprintf(out, "  %-16s %s %s/%s\n", r.Name, bar(r.Used, r.Hard, 20), r.Used, r.Hard)
		}
	}
	return nil
}
