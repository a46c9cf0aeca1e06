package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/labhub/teamspace/hook/allowance"
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

// Allowance is what `allowance` answers: what I hold of the platform's
// allowance per requester, what I may still ask for, and the limits of
// one TeamSpace; each part says why it is unknown when it is.
type Allowance struct {
	User   string `json:"user"`
	Exempt bool   `json:"exempt"`
	// Held: what my TeamSpaces hold of the allowance, as the hook counts
	// it (see held); Unknown
	// says why they could not be counted.
	Held    *Totals `json:"held,omitempty"`
	Allowed *Totals `json:"allowed,omitempty"`
	// Left is Allowed less Held, per bound the platform sets.
	Left *Totals `json:"left,omitempty"`
	// Limits are the keys of the limits ConfigMap that bound one
	// TeamSpace of mine.
	Limits  map[string]string `json:"limits,omitempty"`
	Unknown []string          `json:"unknown,omitempty"`
}

// Totals: a count of TeamSpaces and the sum of their spec.pods, spec.cpu
// and spec.memory; "" where unbounded (in Allowed and Left).
type Totals struct {
	TeamSpaces string `json:"teamSpaces"`
	Pods       string `json:"pods"`
	CPU        string `json:"cpu"`
	Memory     string `json:"memory"`
}

func allowanceOf(ctx context.Context, c *clients) (*Allowance, error) {
	who, err := c.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("who am I (SelfSubjectReview): %v", err)
	}
	user, groups := who.Status.UserInfo.Username, who.Status.UserInfo.Groups
	out := &Allowance{User: user}
	var limits map[string]string
	var bounds allowance.Allowance
	cm, err := c.kube.CoreV1().ConfigMaps(v1alpha1.SystemNamespace).Get(ctx, v1alpha1.LimitsName, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err):
		out.Unknown = append(out.Unknown, fmt.Sprintf("the platform's limits: I may not read ConfigMap %s/%s (the platform team binds ClusterRole teamspace-limits-reader there)", v1alpha1.SystemNamespace, v1alpha1.LimitsName))
	case apierrors.IsNotFound(err):
		out.Unknown = append(out.Unknown, fmt.Sprintf("the platform's limits: ConfigMap %s/%s does not exist (every new TeamSpace of a requester is refused until it does)", v1alpha1.SystemNamespace, v1alpha1.LimitsName))
	case err != nil:
		return nil, fmt.Errorf("reading the platform's limits: %v", err)
	default:
		limits = cm.Data
		for _, g := range strings.Split(limits["exemptGroups"], ",") {
			if g = strings.TrimSpace(g); g != "" && slices.Contains(groups, g) {
				out.Exempt = true
			}
		}
		out.Limits = map[string]string{}
		for _, k := range v1alpha1.LimitKeys {
			if v := strings.TrimSpace(limits[k]); v != "" {
				out.Limits[k] = v
			}
		}
		if bounds, err = allowance.Parse(limits); err != nil {
			out.Unknown = append(out.Unknown, fmt.Sprintf("the allowance: %v (nothing new is created for a requester until the platform fixes it)", err))
		}
		out.Allowed = &Totals{TeamSpaces: limits[v1alpha1.KeyMaxTeamSpaces], Pods: limits[v1alpha1.KeyMaxPods],
			CPU: limits[v1alpha1.KeyMaxCPU], Memory: limits[v1alpha1.KeyMaxMemory]}
	}
	dyn, err := dynamic.NewForConfig(c.rest)
	if err != nil {
		return nil, err
	}
	list, err := dyn.Resource(teamSpaces).List(ctx, metav1.ListOptions{})
	switch {
	case apierrors.IsForbidden(err):
		out.Unknown = append(out.Unknown, "what I hold: I may not list TeamSpaces (a requester may: teamspace-requester)")
	case err != nil:
		return nil, fmt.Errorf("listing TeamSpaces: %v", err)
	default:
		out.Held = held(list.Items, user, bounds)
		if out.Allowed != nil {
			out.Left = left(out.Allowed, out.Held)
		}
	}
	return out, nil
}

// held is what user holds of the allowance a: the hook's own rule
// (allowance.Serve, over each TeamSpace as teamspace.AllowanceEntry reads
// it), so that the plugin shows the room the hook grants. Counted are the
// TeamSpaces user requested that carry the requester label (an exempt
// requester's carry none), those being deleted too, and of those the ones
// that fit, oldest first; one with an invalid spec holds nothing.
func held(items []unstructured.Unstructured, user string, a allowance.Allowance) *Totals {
	var all []allowance.TeamSpace
	var req *allowance.Requester
	for i := range items {
		// Another requester's is never served with user's (Serve): not
		// read at all, as a list may hold every TeamSpace of the cluster.
		if items[i].GetAnnotations()[v1alpha1.RequestedByAnnotation] != user {
			continue
		}
		raw, err := items[i].MarshalJSON()
		var o teamspace.Object
		if err != nil || json.Unmarshal(raw, &o) != nil {
			continue
		}
		ts := teamspace.AllowanceEntry(&o.Metadata, o.Spec)
		if ts.Counted && ts.Requester.Name == user && req == nil {
			req = &ts.Requester
		}
		all = append(all, ts)
	}
	var t allowance.Totals
	if req != nil {
		_, t = allowance.Serve(a, *req, all)
	}
	return &Totals{TeamSpaces: fmt.Sprint(t.TeamSpaces), Pods: fmt.Sprint(t.Pods), CPU: t.CPU.String(), Memory: t.Memory.String()}
}

// left is allowed less held, per bound ("" where unbounded, "0" at or
// above it).
func left(allowed, held *Totals) *Totals {
	minus := func(a, h string) string {
		if strings.TrimSpace(a) == "" {
			return ""
		}
		qa, errA := resource.ParseQuantity(strings.TrimSpace(a))
		qh, errH := resource.ParseQuantity(h)
		if errA != nil || errH != nil {
			return "?"
		}
		qa.Sub(qh)
		if qa.Sign() < 0 {
			return "0"
		}
		return qa.String()
	}
	return &Totals{TeamSpaces: minus(allowed.TeamSpaces, held.TeamSpaces), Pods: minus(allowed.Pods, held.Pods),
		CPU: minus(allowed.CPU, held.CPU), Memory: minus(allowed.Memory, held.Memory)}
}

func printAllowance(a *Allowance, output string, out io.Writer) error {
	if output != "table" {
		return printStructured(a, output, out)
	}
	fmt.Fprintf(out, "Requester: %s", a.User)
	if a.Exempt {
		fmt.Fprint(out, " (in an exempt group: neither the allowance nor the limits bind me)")
	}
	fmt.Fprintln(out)
	bound := func(s string) string {
		if s == "" {
			return "unbounded"
		}
		return s
	}
	if a.Held != nil {
		fmt.Fprintf(out, "%-12s %-12s %-12s %s\n", "", "held", "allowance", "left")
		for _, r := range []struct{ name, h, al, l string }{
			{"TeamSpaces", a.Held.TeamSpaces, allowedOf(a, func(t *Totals) string { return t.TeamSpaces }), leftOf(a, func(t *Totals) string { return t.TeamSpaces })},
			{"pods", a.Held.Pods, allowedOf(a, func(t *Totals) string { return t.Pods }), leftOf(a, func(t *Totals) string { return t.Pods })},
			{"cpu", a.Held.CPU, allowedOf(a, func(t *Totals) string { return t.CPU }), leftOf(a, func(t *Totals) string { return t.CPU })},
			{"memory", a.Held.Memory, allowedOf(a, func(t *Totals) string { return t.Memory }), leftOf(a, func(t *Totals) string { return t.Memory })},
		} {
			fmt.Fprintf(out, "%-12s %-12s %-12s %s\n", r.name, r.h, bound(r.al), r.l)
		}
	}
	if len(a.Limits) > 0 {
		fmt.Fprintln(out, "Limits of one TeamSpace:")
		for _, k := range v1alpha1.LimitKeys {
			if v, ok := a.Limits[k]; ok {
				fmt.Fprintf(out, "  %-26s %s\n", k, v)
			}
		}
	}
	for _, u := range a.Unknown {
		fmt.Fprintf(out, "Unknown: %s.\n", u)
	}
	return nil
}

func allowedOf(a *Allowance, f func(*Totals) string) string {
	if a.Allowed == nil {
		return "?"
	}
	return f(a.Allowed)
}

func leftOf(a *Allowance, f func(*Totals) string) string {
	switch {
	case a.Left == nil:
		return "?"
	case f(a.Left) == "":
		return "-"
	}
	return f(a.Left)
}
