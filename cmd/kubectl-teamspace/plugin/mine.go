package plugin

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
	"github.com/labhub/teamspace/hook/teamspace"
)

var teamSpaces = schema.GroupVersionResource{Group: v1alpha1.Group, Version: "v1alpha1", Resource: "teamspaces"}

// MineRow is one TeamSpace of `mine`.
type MineRow struct {
	Name string `json:"name"`
	// Roles: owner, requester, or both.
	Roles []string `json:"roles"`
	// Ready is the Ready condition's status and reason ("True Ready").
	Ready string `json:"ready,omitempty"`
	// Namespaces are the team's namespaces (status.namespace, then
	// status.namespaces' others).
	Namespaces []string `json:"namespaces,omitempty"`
	// Pods is spec.pods, what it allows (what is used: show).
	Pods string `json:"pods,omitempty"`
	// Unreadable says why the TeamSpace could not be read.
	Unreadable string `json:"unreadable,omitempty"`
}

// Mine is what `mine` answers: who I am, my TeamSpaces, and what it could
// not know.
type Mine struct {
	User       string    `json:"user"`
	TeamSpaces []MineRow `json:"teamspaces"`
	// Note says what the list may miss with these rights.
	Note string `json:"note,omitempty"`
}

// rights are what SelfSubjectRulesReview says of TeamSpaces: the names I
// may get, and whether I may list them all.
type rights struct {
	names   []string
	canList bool
}

// teamSpaceRights reads the rules of a SelfSubjectRulesReview for
// TeamSpaces. An owner's ClusterRole teamspace-owner-<name> names its
// TeamSpace (get), a requester's role lists them all.
func teamSpaceRights(rules []authorizationv1.ResourceRule) rights {
	var r rights
	matches := func(list []string, want string) bool {
		return slices.Contains(list, want) || slices.Contains(list, "*")
	}
	for _, rule := range rules {
		if !matches(rule.APIGroups, v1alpha1.Group) || !matches(rule.Resources, "teamspaces") {
			continue
		}
		switch {
		case len(rule.ResourceNames) == 0 && matches(rule.Verbs, "list"):
			r.canList = true
		case len(rule.ResourceNames) > 0 && matches(rule.Verbs, "get"):
			for _, n := range rule.ResourceNames {
				if !slices.Contains(r.names, n) {
					r.names = append(r.names, n)
				}
			}
		}
	}
	sort.Strings(r.names)
	return r
}

// ownedBy reports whether spec.owners names the user or one of groups,
// as bound: a reserved owner (system:authenticated, a ServiceAccount of
// kube-system) is bound nowhere and makes nobody an owner.
func ownedBy(ts *unstructured.Unstructured, user string, groups []string) bool {
	owners, _, _ := unstructured.NestedSlice(ts.Object, "spec", "owners")
	for _, o := range owners {
		m, _ := o.(map[string]any)
		kind, _ := m["kind"].(string)
		name, _ := m["name"].(string)
		ns, _ := m["namespace"].(string)
		if teamspace.ReservedOwner(teamspace.Owner{Kind: kind, Name: name, Namespace: ns}) {
			continue
		}
		switch kind {
		case "User":
			if name == user {
				return true
			}
		case "Group":
			if slices.Contains(groups, name) {
				return true
			}
		case "ServiceAccount":
			if user == "system:serviceaccount:"+ns+":"+name {
				return true
			}
		}
	}
	return false
}

// row is a TeamSpace's row.
func row(ts *unstructured.Unstructured, roles []string) MineRow {
	r := MineRow{Name: ts.GetName(), Roles: roles}
	conds, _, _ := unstructured.NestedSlice(ts.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			r.Ready = fmt.Sprintf("%v %v", m["status"], m["reason"])
		}
	}
	if ns, _, _ := unstructured.NestedString(ts.Object, "status", "namespace"); ns != "" {
		r.Namespaces = append(r.Namespaces, ns)
	}
	list, _, _ := unstructured.NestedSlice(ts.Object, "status", "namespaces")
	for _, n := range list {
		m, _ := n.(map[string]any)
		if name, _ := m["name"].(string); name != "" && !slices.Contains(r.Namespaces, name) {
			r.Namespaces = append(r.Namespaces, name)
		}
	}
	if pods, ok, _ := unstructured.NestedFieldNoCopy(ts.Object, "spec", "pods"); ok {
		r.Pods = fmt.Sprint(pods)
	}
	return r
}

// mine finds my TeamSpaces: by the names my rights give (an owner may get
// only its own), and, where I may list them, by spec.owners and the
// requester annotation.
func mine(ctx context.Context, c *clients) (*Mine, error) {
	who, err := c.kube.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("who am I (SelfSubjectReview): %v", err)
	}
	user, groups := who.Status.UserInfo.Username, who.Status.UserInfo.Groups
	review, err := c.kube.AuthorizationV1().SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: c.namespace}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("what may I do (SelfSubjectRulesReview): %v", err)
	}
	r := teamSpaceRights(review.Status.ResourceRules)
	dyn, err := dynamic.NewForConfig(c.rest)
	if err != nil {
		return nil, err
	}
	api := dyn.Resource(teamSpaces)
	out := &Mine{User: user, TeamSpaces: []MineRow{}}
	if review.Status.Incomplete {
		out.Note = "the API server's list of my rights is incomplete (" + review.Status.EvaluationError + "): TeamSpaces I own through other rules may be missing"
	}
	found := map[string]*MineRow{}
	add := func(ts *unstructured.Unstructured, role string) {
		if f, ok := found[ts.GetName()]; ok {
			if !slices.Contains(f.Roles, role) {
				f.Roles = append(f.Roles, role)
			}
			return
		}
		rw := row(ts, []string{role})
		found[ts.GetName()] = &rw
	}
	if r.canList {
		list, err := api.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("listing TeamSpaces: %v", err)
		}
		for i := range list.Items {
			ts := &list.Items[i]
			if ownedBy(ts, user, groups) {
				add(ts, "owner")
			}
			if ts.GetAnnotations()[v1alpha1.RequestedByAnnotation] == user {
				add(ts, "requester")
			}
		}
	} else {
		for _, n := range r.names {
			ts, err := api.Get(ctx, n, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				continue // a role left behind: not a TeamSpace any more
			case err != nil:
				found[n] = &MineRow{Name: n, Roles: []string{"owner"}, Unreadable: oneLine(err)}
				continue
			}
			add(ts, "owner")
		}
		if out.Note == "" {
			out.Note = "without the right to list TeamSpaces, only those whose owners name me (or a group of mine) are found, not those I requested"
		}
	}
	for _, n := range slices.Sorted(maps.Keys(found)) {
		out.TeamSpaces = append(out.TeamSpaces, *found[n])
	}
	return out, nil
}

// printMine writes m as a table (what kubectl get prints), json or yaml.
func printMine(m *Mine, output string, out io.Writer) error {
	if output != "table" {
		return printStructured(m, output, out)
	}
	if len(m.TeamSpaces) == 0 {
		fmt.Fprintf(out, "No TeamSpace is %s's.\n", m.User)
	} else {
		w := tabwriter.NewWriter(out, 0, 4, 3, ' ', 0)
		fmt.Fprintln(w, "NAME\tROLE\tREADY\tPODS\tNAMESPACES")
		for _, r := range m.TeamSpaces {
			ready, pods, namespaces := r.Ready, r.Pods, strings.Join(r.Namespaces, ",")
			if r.Unreadable != "" {
				ready = "cannot read: " + r.Unreadable
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Name, strings.Join(r.Roles, ","), dash(ready), dash(pods), dash(namespaces))
		}
		w.Flush()
	}
	if m.Note != "" {
		fmt.Fprintf(out, "Note: %s.\n", m.Note)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
