package teamspace

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// Tiny typed fixtures for the Sync table: each builds only what a row needs,
// so that a row reads as the situation it is about. The golden cases in
// tests/testdata cover the same ground on the engine's real requests.
const fixtureUID = "11111111-2222-4333-8444-555555555555"

func parent(spec string) *Parent {
	p := &Parent{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.Kind, Spec: json.RawMessage(spec)}
	p.Metadata = Meta{Name: "alpha", UID: fixtureUID, Generation: 2}
	return p
}

type objOpt func(*Object)

func phase(p string) objOpt { return func(o *Object) { o.Status.Phase = p } }

func deleting() objOpt {
	return func(o *Object) { t := metav1.Unix(1, 0); o.Metadata.DeletionTimestamp = &t }
}

func controlledBy(uid string) objOpt {
	return func(o *Object) {
		yes := true
		o.Metadata.OwnerReferences = []metav1.OwnerReference{{Kind: v1alpha1.Kind, Name: "alpha", UID: types.UID(uid), Controller: &yes}}
	}
}

func hard(pods, cpu string) objOpt {
	return hardOf(map[string]string{"pods": pods, "requests.cpu": cpu})
}

// hardOf sets the quota's spec.hard as the engine would send it.
func hardOf(h map[string]string) objOpt {
	return func(o *Object) {
		raw, err := json.Marshal(map[string]any{"hard": h})
		if err != nil {
			panic(err)
		}
		o.Spec = raw
	}
}

func withLastApplied(j string) objOpt {
	return func(o *Object) { o.Metadata.Annotations = map[string]string{LastAppliedAnnotation: j} }
}

func namespace(opts ...objOpt) *Object {
	o := &Object{APIVersion: "v1", Kind: "Namespace", Metadata: Meta{Name: "team-alpha"}}
	o.Metadata.Labels = map[string]string{v1alpha1.TeamSpaceLabel: "alpha", PodSecurityEnforceLabel: "baseline", PodSecurityEnforceVersionLabel: "latest", v1alpha1.NetworkIsolationLabel: "true"}
	o.Status.Phase = "Active"
	for _, f := range opts {
		f(o)
	}
	return o
}

// named names the object.
func named(name string) objOpt { return func(o *Object) { o.Metadata.Name = name } }

// label sets one label (an empty value removes it).
func label(k, v string) objOpt {
	return func(o *Object) {
		if v == "" {
			delete(o.Metadata.Labels, k)
			return
		}
		o.Metadata.Labels[k] = v
	}
}

// inside builds a child of team-alpha from its kind and owned content, as
// the engine would show it decoded.
func inside(kind, name, content string, opts ...objOpt) *Object {
	o := &Object{Kind: kind, Metadata: Meta{Name: name, Namespace: "team-alpha", Labels: map[string]string{v1alpha1.TeamSpaceLabel: "alpha"}}}
	if content != "" {
		if err := json.Unmarshal([]byte(content), o); err != nil {
			panic(err)
		}
	}
	for _, f := range opts {
		f(o)
	}
	return o
}

func quota(opts ...objOpt) *Object { return inside("ResourceQuota", QuotaName, "", opts...) }

// limitRange is team-defaults with the given default cpu request.
func limitRange(cpu string) *Object {
	return inside("LimitRange", LimitRangeName, `{"spec":{"limits":[{"type":"Container","defaultRequest":{"cpu":"`+cpu+`"}}]}}`)
}

// networkPolicy is team-isolation with the given ingress rules.
func networkPolicy(ingress string) *Object {
	return inside("NetworkPolicy", NetworkPolicyName, `{"spec":{"podSelector":{},"policyTypes":["Ingress"],"ingress":`+ingress+`}}`)
}

const isolated = `[{"from":[{"podSelector":{}}]}]`

// roleBinding is team-owners binding the given Users to admin.
func roleBinding(users ...string) *Object {
	subjects := make([]any, 0, len(users))
	for _, u := range users {
		subjects = append(subjects, map[string]any{"kind": "User", "name": u, "apiGroup": "rbac.authorization.k8s.io"})
	}
	o := inside("RoleBinding", RoleBindingName, `{"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"}}`)
	o.Subjects, _ = json.Marshal(subjects)
	return o
}

// ownerRole and ownerBinding are the owners' ClusterRole and binding of
// alpha, the binding with the given Users.
func ownerRole(opts ...objOpt) *Object {
	o := inside("ClusterRole", OwnerAccessName("alpha"), `{"rules":[{"apiGroups":["platform.labhub.io"],"resources":["teamspaces"],"resourceNames":["alpha"],"verbs":["get","watch","update","patch"]}]}`, opts...)
	o.Metadata.Namespace = ""
	return o
}

// relatedRole adds ClusterRole role to r's related objects, as the
// customize hook asks the engine for it by name.
func relatedRole(r *Request, role *Object) *Request {
	r.Related[ownerRoleType.key] = ObjectMap{role.Metadata.Name: role}
	return r
}

func ownerBinding(users ...string) *Object {
	o := roleBinding(users...)
	o.Kind, o.Metadata.Name, o.Metadata.Namespace = "ClusterRoleBinding", OwnerAccessName("alpha"), ""
	o.RoleRef = json.RawMessage(`{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"` + OwnerAccessName("alpha") + `"}`)
	return o
}

// keyOf is the engine's key of a child type by kind.
func keyOf(kind string) string {
	for _, t := range childTypes {
		if t.kind == kind {
			return t.key
		}
	}
	panic("no child type " + kind)
}

// request is a sync request with the given related namespace (may be nil)
// and observed children (nil entries are skipped).
func request(spec string, related *Object, children ...*Object) *Request {
	r := &Request{Parent: parent(spec), Children: map[string]ObjectMap{}, Related: map[string]ObjectMap{}}
	for _, t := range childTypes {
		r.Children[t.key] = ObjectMap{}
	}
	for _, c := range children {
		if c == nil {
			continue
		}
		key := c.Metadata.Name
		if c.Metadata.Namespace != "" {
			key = c.Metadata.Namespace + "/" + key
		}
		r.Children[keyOf(c.Kind)][key] = c
	}
	if related != nil {
		r.Related[namespaceType.key] = ObjectMap{"team-alpha": related}
	}
	return r
}

// TestSyncReasons has a row per Ready reason: the children asked for (kind
// and, for the quota, its limits) and the condition's status and reason.
func TestSyncReasons(t *testing.T) {
	const spec = `{"pods": 4, "cpu": "0.5"}`
	const owned = `{"pods": 4, "cpu": "0.5", "owners": [{"kind": "User", "name": "ann"}]}`
	const ns, rq, lr, rb, np, cr, crb = "Namespace", "ResourceQuota pods=4, requests.cpu=500m", "LimitRange", "RoleBinding", "NetworkPolicy", "ClusterRole", "ClusterRoleBinding"
	all := []string{ns, rq, lr, np}
	owners := []string{ns, rq, lr, rb, np, cr, crb}
	// steady is every child of spec as desired; with replaces one by kind.
	steady := func(replace ...*Object) []*Object {
		out := []*Object{namespace(), quota(hard("4", "500m")), limitRange("125m"), networkPolicy(isolated)}
		for _, r := range replace {
			for i, o := range out {
				if o.Kind == r.Kind {
					out[i] = r
				}
			}
		}
		return out
	}
	without := func(kind string) []*Object {
		var out []*Object
		for _, o := range steady() {
			if o.Kind != kind {
				out = append(out, o)
			}
		}
		return out
	}
	tests := []struct {
		name         string
		req          *Request
		wantChildren []string
		wantStatus   metav1.ConditionStatus
		wantReason   string
	}{
		{name: "Ready: every child as desired", req: request(spec, nil, steady()...),
			wantChildren: all, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonReady},
		{name: "Ready: observed quota in another spelling", req: request(spec, nil, steady(quota(hard("4", "0.5")))...),
			wantChildren: all, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonReady},
		{name: "Ready: with owners", req: request(owned, nil, append(steady(), roleBinding("ann"), ownerRole(), ownerBinding("ann"))...),
			wantChildren: owners, wantStatus: metav1.ConditionTrue, wantReason: v1alpha1.ReasonReady},
		{name: "Creating: nothing observed", req: request(spec, nil),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonCreating},
		{name: "Creating: own namespace seen only as related", req: request(spec, namespace(controlledBy(fixtureUID))),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonCreating},
		{name: "Creating: namespace Active, nothing in it", req: request(spec, nil, namespace()),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonCreating},
		{name: "Creating: with owners, their cluster-wide access already there", req: request(owned, nil, namespace(), ownerRole(), ownerBinding("ann")),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonCreating},
		{name: "NamespaceOutOfDate: nothing inside, the namespace's labels edited", req: request(spec, nil, namespace(label(PodSecurityEnforceLabel, "privileged"))),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceOutOfDate},
		{name: "NamespacePending: children inside seen, the namespace not", req: request(spec, nil, without("Namespace")...),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespacePending},
		{name: "NamespaceTerminating: deletionTimestamp, phase still Active", req: request(spec, nil, namespace(deleting())),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceTerminating},
		{name: "NamespaceTerminating: phase Terminating only", req: request(spec, nil, steady(namespace(phase("Terminating")))...),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceTerminating},
		{name: "NamespaceNotActive: phase empty", req: request(spec, nil, namespace(phase(""))),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceNotActive},
		{name: "NamespaceOutOfDate: Pod Security label edited", req: request(spec, nil, steady(namespace(label(PodSecurityEnforceLabel, "privileged")))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceOutOfDate},
		{name: "NamespaceOutOfDate: TeamSpace label removed", req: request(spec, nil, steady(namespace(label(v1alpha1.TeamSpaceLabel, "")))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceOutOfDate},
		{name: "QuotaPending", req: request(spec, nil, without("ResourceQuota")...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonQuotaPending},
		{name: "QuotaOutOfDate: pods edited", req: request(spec, nil, steady(quota(hard("99", "500m")))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonQuotaOutOfDate},
		{name: "QuotaOutOfDate: cpu key missing", req: request(spec, nil, steady(quota(hardOf(map[string]string{"pods": "4"})))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonQuotaOutOfDate},
		{name: "QuotaOutOfDate: memory no longer asked for", req: request(spec, nil, steady(quota(hardOf(map[string]string{"pods": "4", "requests.cpu": "500m", "requests.memory": "1Gi"}),
			withLastApplied(`{"spec":{"hard":{"pods":"4","requests.cpu":"500m","requests.memory":"1Gi"}}}`)))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonQuotaOutOfDate},
		{name: "QuotaOutOfDate: memory added by hand is answered once, to be recorded", req: request(spec, nil, steady(quota(hardOf(map[string]string{"pods": "4", "requests.cpu": "500m", "requests.memory": "1Gi"})))...),
			wantChildren: []string{ns, "ResourceQuota pods=4, requests.cpu=500m, requests.memory=1Gi", lr, np}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonQuotaOutOfDate},
		{name: "LimitRangePending", req: request(spec, nil, without("LimitRange")...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonLimitRangePending},
		{name: "LimitRangeOutOfDate: default request edited", req: request(spec, nil, steady(limitRange("900m"))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonLimitRangeOutOfDate},
		{name: "NetworkPolicyPending", req: request(spec, nil, without("NetworkPolicy")...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNetworkPolicyPending},
		{name: "NetworkPolicyOutOfDate: ingress opened", req: request(spec, nil, steady(networkPolicy(`[{}]`))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNetworkPolicyOutOfDate},
		{name: "RoleBindingPending", req: request(owned, nil, append(steady(), ownerRole(), ownerBinding("ann"))...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRoleBindingPending},
		{name: "RoleBindingOutOfDate: a subject added by hand", req: request(owned, nil, append(steady(), roleBinding("ann", "mallory"), ownerRole(), ownerBinding("ann"))...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRoleBindingOutOfDate},
		{name: "RoleBindingOutOfDate: owner missing", req: request(owned, nil, append(steady(), roleBinding("bob"), ownerRole(), ownerBinding("ann"))...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonRoleBindingOutOfDate},
		{name: "ClusterRolePending: the binding waits for it", req: request(owned, nil, append(steady(), roleBinding("ann"))...),
			wantChildren: owners[:6], wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRolePending},
		{name: "ClusterRolePending: own role seen only as related", req: relatedRole(request(owned, nil, append(steady(), roleBinding("ann"))...), ownerRole(controlledBy(fixtureUID))),
			wantChildren: owners[:6], wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRolePending},
		{name: "ClusterRoleConflict: a role of that name someone else made is not bound", req: relatedRole(request(owned, nil, append(steady(), roleBinding("ann"))...), ownerRole()),
			wantChildren: owners[:6], wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRoleConflict},
		{name: "ClusterRoleConflict: even with a binding left from before", req: relatedRole(request(owned, nil, append(steady(), roleBinding("ann"), ownerBinding("ann"))...), ownerRole(controlledBy("someone-else"))),
			wantChildren: owners[:6], wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRoleConflict},
		{name: "OwnerReserved: a system: group is not bound, the rest is", req: request(`{"pods": 4, "cpu": "0.5", "owners": [{"kind": "User", "name": "ann"}, {"kind": "Group", "name": "system:unauthenticated"}]}`, nil, append(steady(), roleBinding("ann"), ownerRole(), ownerBinding("ann"))...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonOwnerReserved},
		{name: "OwnerReserved: only reserved owners, nothing bound", req: request(`{"pods": 4, "cpu": "0.5", "owners": [{"kind": "ServiceAccount", "namespace": "kube-system", "name": "default"}]}`, nil, steady()...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonOwnerReserved},
		{name: "NetworkPolicyOutOfDate: podSelector narrowed by an added key", req: request(spec, nil, steady(inside("NetworkPolicy", NetworkPolicyName, `{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}},"policyTypes":["Ingress"],"ingress":`+isolated+`}}`))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNetworkPolicyOutOfDate},
		{name: "ClusterRoleOutOfDate: list added by hand", req: request(owned, nil, append(steady(), roleBinding("ann"), ownerBinding("ann"), func() *Object {
			o := ownerRole()
			o.Rules = json.RawMessage(`[{"apiGroups":["platform.labhub.io"],"resources":["teamspaces"],"resourceNames":["alpha"],"verbs":["get","watch","list"]}]`)
			return o
		}())...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRoleOutOfDate},
		{name: "ClusterRoleBindingPending", req: request(owned, nil, append(steady(), roleBinding("ann"), ownerRole())...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRoleBindingPending},
		{name: "ClusterRoleBindingOutOfDate: a removed owner still bound", req: request(owned, nil, append(steady(), roleBinding("ann"), ownerRole(), ownerBinding("bob"))...),
			wantChildren: owners, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonClusterRoleBindingOutOfDate},
		{name: "ChildRemoving: the owners' access when owners are removed", req: request(spec, nil, append(steady(), ownerRole(), ownerBinding("ann"))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonChildRemoving},
		{name: "ChildRemoving: owners removed from the spec", req: request(spec, nil, append(steady(), roleBinding("ann"))...),
			wantChildren: all, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonChildRemoving},
		{name: "ChildRemoving: networkIsolation false", req: request(`{"pods": 4, "cpu": "0.5", "networkIsolation": false}`, nil, steady(namespace(label(v1alpha1.NetworkIsolationLabel, "")))...),
			wantChildren: []string{ns, rq, lr}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonChildRemoving},
		{name: "NamespaceConflict: related namespace of another owner", req: request(spec, namespace(controlledBy("someone-else"))),
			wantChildren: nil, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceConflict},
		{name: "NamespaceConflict: related namespace without owner", req: request(spec, namespace()),
			wantChildren: nil, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonNamespaceConflict},
		{name: "InvalidSpec: keeps the observed quota", req: request(`{"pods": 0}`, nil, namespace(), quota(hard("3", "1"))),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec},
		{name: "InvalidSpec: keeps what the engine last applied, not a hand edit", req: request(`{"pods": 0}`, nil, namespace(), quota(hard("99", "1"), withLastApplied(`{"spec":{"hard":{"pods":"3","requests.cpu":"1"}}}`))),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec},
		{name: "InvalidSpec: last applied without limits, keeps the observed quota", req: request(`{"pods": 0}`, nil, namespace(), quota(hard("3", "1"), withLastApplied(`{"spec":{}}`))),
			wantChildren: []string{ns, "ResourceQuota pods=3, requests.cpu=1"}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec},
		{name: "InvalidSpec: keeps every child inside", req: request(`{"pods": 4, "podSecurity": "none"}`, nil, append(steady(), roleBinding("ann"))...),
			wantChildren: []string{ns, rq, lr, rb, np}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec},
		{name: "InvalidSpec: no quota to keep", req: request(`{"cpu": "lots", "pods": 4}`, nil, namespace()),
			wantChildren: []string{ns}, wantStatus: metav1.ConditionFalse, wantReason: v1alpha1.ReasonInvalidSpec},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.req.Validate(); err != nil {
				t.Fatalf("fixture is not a valid request: %v", err)
			}
			resp := Sync(tt.req)
			var got []string
			for _, c := range resp.Children {
				desc, _ := c["kind"].(string)
				if h, ok := unstructuredHard(c); ok {
					desc += " " + describeHard(h)
				}
				got = append(got, desc)
			}
			if diff := cmp.Diff(tt.wantChildren, got); diff != "" {
				t.Errorf("children (-want +got):\n%s", diff)
			}
			// Ready, and beside a Ready that is not True the kstatus
			// condition of its reason (condition.go).
			want := []string{v1alpha1.ConditionReady}
			switch {
			case tt.wantStatus == metav1.ConditionTrue:
			case slices.Contains(stalledReasons, tt.wantReason):
				want = append(want, v1alpha1.ConditionStalled)
			default:
				want = append(want, v1alpha1.ConditionReconciling)
			}
			var types []string
			for _, c := range resp.Status.Conditions {
				types = append(types, c.Type)
				if c.Type != v1alpha1.ConditionReady && (c.Status != metav1.ConditionTrue || c.Reason != tt.wantReason) {
					t.Errorf("condition %s = %s %s, want True %s", c.Type, c.Status, c.Reason, tt.wantReason)
				}
			}
			if diff := cmp.Diff(want, types); diff != "" {
				t.Fatalf("condition types (-want +got):\n%s", diff)
			}
			c := resp.Status.Conditions[0]
			if c.Type != v1alpha1.ConditionReady || c.Status != tt.wantStatus || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Errorf("condition = %s %s %s (generation %d), want Ready %s %s (generation 2)", c.Type, c.Status, c.Reason, c.ObservedGeneration, tt.wantStatus, tt.wantReason)
			}
		})
	}
}

// unstructuredHard reads spec.hard of an answered child, if it has one.
func unstructuredHard(obj map[string]any) (corev1.ResourceList, bool) {
	spec, ok := obj["spec"].(map[string]any)
	if !ok {
		return nil, false
	}
	h, ok := spec["hard"].(map[string]any)
	if !ok {
		return nil, false
	}
	out := corev1.ResourceList{}
	for k, v := range h {
		s, _ := v.(string)
		out[corev1.ResourceName(k)] = resource.MustParse(s)
	}
	return out, true
}

// TestReadyMessage has a row per part of the Ready message, each child
// type's.
func TestReadyMessage(t *testing.T) {
	tests := []struct {
		name, spec, want string
	}{
		{name: "seed", spec: `{"pods": 4}`,
			want: "namespace team-alpha is Active (pod security baseline) with quota pods=4, requests.cpu=1, default request cpu=250m, ingress only from the namespace"},
		{name: "memory, one owner, no isolation", spec: `{"pods": 2, "cpu": "0.5", "memory": "1Gi", "podSecurity": "restricted", "networkIsolation": false, "owners": [{"kind": "User", "name": "ann"}]}`,
			want: "namespace team-alpha is Active (pod security restricted) with quota pods=2, requests.cpu=500m, requests.memory=1Gi, default request cpu=250m, memory=512Mi, 1 owner(s) bound to ClusterRole admin, owners may read TeamSpace alpha and change its owners (ClusterRole teamspace-owner-alpha)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec, err := ParseSpec([]byte(tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, readyMessage(units("alpha", spec, nil))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestCreatingOneStatus: a new TeamSpace's first two syncs, before its
// namespace exists and once it does (nothing inside yet), answer the same
// status byte for byte, so that the engine writes it once.
func TestCreatingOneStatus(t *testing.T) {
	for _, tc := range []struct {
		name, spec string
		extra      []string // the extra namespaces the engine creates
	}{
		{"no owners", `{"pods": 4, "cpu": "0.5"}`, nil},
		{"owners", `{"pods": 4, "cpu": "0.5", "owners": [{"kind": "User", "name": "ann"}]}`, nil},
		{"namespaces", `{"pods": 4, "cpu": "0.5", "namespaces": [{"name": "dev", "pods": 1, "cpu": "100m"}, {"name": "prod", "pods": 1, "cpu": "100m"}]}`,
			[]string{"team-alpha--dev", "team-alpha--prod"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := Sync(request(tc.spec, nil))
			namespaces := []*Object{namespace()}
			for _, n := range tc.extra {
				namespaces = append(namespaces, namespace(named(n)))
			}
			second := request(tc.spec, nil, namespaces...)
			// The engine wrote the first answer's status; the second
			// request carries it.
			second.Parent.Status.Conditions = first.Status.Conditions
			a, _ := json.Marshal(first.Status)
			b, _ := json.Marshal(Sync(second).Status)
			if diff := cmp.Diff(string(a), string(b)); diff != "" {
				t.Errorf("status of the second sync differs from the first (-first +second):\n%s", diff)
			}
		})
	}
}

// TestSyncStrangersRecordedThenDropped: a key added inside an owned map is
// answered once (the engine records it in its last-applied copy), then left
// out (its merge deletes it); the reserved owners are in no binding.
func TestSyncStrangersRecordedThenDropped(t *testing.T) {
	const spec = `{"pods": 4, "cpu": "0.5"}`
	narrowed := `{"spec":{"podSelector":{"matchLabels":{"isolated":"never"}},"policyTypes":["Ingress"],"ingress":` + isolated + `}}`
	podSelector := func(r *Request) any {
		for _, c := range Sync(r).Children {
			if c["kind"] == "NetworkPolicy" {
				return c["spec"].(map[string]any)["podSelector"]
			}
		}
		t.Fatal("no NetworkPolicy answered")
		return nil
	}
	steady := []*Object{namespace(), quota(hard("4", "500m")), limitRange("125m")}
	first := request(spec, nil, append(steady, inside("NetworkPolicy", NetworkPolicyName, narrowed))...)
	if diff := cmp.Diff(map[string]any{"matchLabels": map[string]any{"isolated": "never"}}, podSelector(first)); diff != "" {
		t.Errorf("first pass: podSelector (-want +got):\n%s", diff)
	}
	second := request(spec, nil, append(steady, inside("NetworkPolicy", NetworkPolicyName, narrowed, withLastApplied(narrowed)))...)
	if diff := cmp.Diff(map[string]any{}, podSelector(second)); diff != "" {
		t.Errorf("second pass: podSelector (-want +got):\n%s", diff)
	}
}

func TestSyncReservedOwnersNotBound(t *testing.T) {
	spec := `{"pods": 4, "cpu": "0.5", "owners": [{"kind": "Group", "name": "system:authenticated"}, {"kind": "User", "name": "ann"},
		{"kind": "User", "name": "system:admin"}, {"kind": "ServiceAccount", "namespace": "teamspace-system", "name": "metacontroller"},
		{"kind": "ServiceAccount", "namespace": "kube-public", "name": "x"}, {"kind": "ServiceAccount", "namespace": "tools", "name": "ci"}]}`
	r := request(spec, nil, namespace(), quota(hard("4", "500m")), ownerRole())
	resp := Sync(r)
	bindings := 0
	for _, c := range resp.Children {
		if c["kind"] != "RoleBinding" && c["kind"] != "ClusterRoleBinding" {
			continue
		}
		bindings++
		var names []string
		for _, s := range c["subjects"].([]any) {
			names = append(names, s.(map[string]any)["name"].(string))
		}
		if diff := cmp.Diff([]string{"ann", "ci"}, names); diff != "" {
			t.Errorf("%s subjects (-want +got):\n%s", c["kind"], diff)
		}
	}
	if bindings != 2 {
		t.Errorf("%d bindings answered, want 2", bindings)
	}
}
