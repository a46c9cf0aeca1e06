package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Bounds the schema and the hook share. The markers below spell the same
// numbers (markers cannot name a constant); TestSchemaBounds in package
// teamspace holds the generated crd.yaml to them.
const (
	MinPods = 1
	MaxPods = 50
	// DefaultCPU is spec.cpu when the API server did not default it.
	DefaultCPU = "1"
	// DefaultPodSecurity is spec.podSecurity's default.
	DefaultPodSecurity = "baseline"
	// MaxOwners bounds spec.owners (it keeps the CEL rule that checks for
	// duplicate names within the API server's cost budget).
	MaxOwners = 32
	// MaxObjectCount is the most of one kind spec.objects may name.
	MaxObjectCount = 100000
	// MaxNameLength keeps "team-" + name within a DNS-1123 label (63).
	MaxNameLength = 58
	// MaxNamespaces bounds spec.namespaces (the platform's limits may bound
	// it lower: key maxNamespaces).
	MaxNamespaces = 10
	// NamespaceSeparator joins a TeamSpace's name and an entry of
	// spec.namespaces into the entry's namespace, team-<name>--<entry>.
	// Neither a new TeamSpace's name nor an entry may hold it, and neither
	// may begin or end with "-": so each such namespace name splits back
	// into one TeamSpace and one entry, and none is another TeamSpace's
	// team-<name>. MaxNamespacePartsLength keeps it a DNS-1123 label.
	NamespaceSeparator      = "--"
	MaxNamespacePartsLength = 63 - len("team-") - len(NamespaceSeparator)
)

// TeamSpace hands a team its own namespace team-<name> with a ResourceQuota,
// default requests, owners, Pod Security and ingress isolation.
//
// The name becomes namespace team-<name>, so it must be a DNS-1123 label of
// at most 58 characters (a cluster-scoped object could otherwise be named
// like a DNS subdomain, "a.b").
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=ts
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Pods",type=integer,JSONPath=".spec.pods",description="Pods allowed (spec.pods); what is used, live: kubectl teamspace show NAME"
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=".spec.cpu",description="CPU requests allowed (spec.cpu); what is used, live: kubectl teamspace show NAME"
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=".status.namespace"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=".status.conditions[?(@.type==\"Ready\")].status"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=".spec.memory",priority=1,description="Memory requests allowed (spec.memory), when set"
// +kubebuilder:printcolumn:name="Requested-By",type=string,JSONPath=".metadata.annotations.platform\\.labhub\\.io/requested-by",priority=1,description="Who created it, stamped by the API server (hack/deploy/requested-by.yaml)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 58 && self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1123 label (lower-case letters, digits and '-') of at most 58 characters: it becomes namespace team-<name>",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="oldSelf.hasValue() || !self.metadata.name.contains('--')",optionalOldSelf=true,message="metadata.name must not contain \"--\": it separates a TeamSpace's name from its extra namespaces' (team-<name>--<entry>)",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.spec.namespaces) || self.spec.namespaces.all(e, self.metadata.name.size() + e.name.size() <= 56)",message="each namespace is team-<name>--<entry>, a DNS-1123 label of at most 63 characters: the TeamSpace's name and the entry's together at most 56",fieldPath=".spec.namespaces",reason=FieldValueInvalid
type TeamSpace struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec TeamSpaceSpec `json:"spec"`
	// Written by the engine from the hook's answer. Until then it is
	// {observedGeneration: 0}: a generation the controller has not seen,
	// which readiness checks (kstatus: Flux, kpt) read as InProgress rather
	// than Current.
	//
	// +kubebuilder:default={}
	Status TeamSpaceStatus `json:"status,omitempty"`
}

// TeamSpaceList is a list of TeamSpaces.
//
// +kubebuilder:object:root=true
type TeamSpaceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []TeamSpace `json:"items"`
}

// TeamSpaceSpec is what the team gets.
//
// +kubebuilder:validation:XValidation:rule="!has(self.defaults) || !has(self.defaults.cpu) || !isQuantity(self.defaults.cpu) || !has(self.cpu) || !isQuantity(self.cpu) || quantity(self.defaults.cpu).compareTo(quantity(self.cpu)) <= 0",message="must not exceed spec.cpu",fieldPath=".defaults.cpu",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.defaults) || !has(self.defaults.memory) || has(self.memory)",message="needs spec.memory (without it no memory is limited)",fieldPath=".defaults.memory",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.defaults) || !has(self.defaults.memory) || !has(self.memory) || !isQuantity(self.defaults.memory) || !isQuantity(self.memory) || quantity(self.defaults.memory).compareTo(quantity(self.memory)) <= 0",message="must not exceed spec.memory",fieldPath=".defaults.memory",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || self.namespaces.map(e, e.pods).sum() < self.pods",message="the namespaces' pods must add up to less than spec.pods: they are shares of it, and team-<name> keeps the rest (at least one pod)",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || !has(self.cpu) || !isQuantity(self.cpu) || !self.namespaces.all(e, isQuantity(e.cpu)) || self.namespaces.map(e, int(quantity(e.cpu).asApproximateFloat() * 1000.0 + 0.5)).sum() < int(quantity(self.cpu).asApproximateFloat() * 1000.0 + 0.5)",message="the namespaces' cpu must add up to less than spec.cpu: they are shares of it, and team-<name> keeps the rest",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || !has(self.memory) || !isQuantity(self.memory) || !self.namespaces.all(e, !has(e.memory) || isQuantity(e.memory)) || self.namespaces.filter(e, has(e.memory)).map(e, quantity(e.memory).asApproximateFloat()).sum() < quantity(self.memory).asApproximateFloat()",message="the namespaces' memory must add up to less than spec.memory: they are shares of it, and team-<name> keeps the rest",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || !has(self.ephemeralStorage) || !isQuantity(self.ephemeralStorage) || !self.namespaces.all(e, !has(e.ephemeralStorage) || isQuantity(e.ephemeralStorage)) || self.namespaces.filter(e, has(e.ephemeralStorage)).map(e, quantity(e.ephemeralStorage).asApproximateFloat()).sum() < quantity(self.ephemeralStorage).asApproximateFloat()",message="the namespaces' ephemeralStorage must add up to less than spec.ephemeralStorage: they are shares of it, and team-<name> keeps the rest",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || self.namespaces.all(e, !has(e.memory) || has(self.memory))",message="a namespace's memory is a share of spec.memory, which is unset",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || self.namespaces.all(e, !has(e.ephemeralStorage) || has(self.ephemeralStorage))",message="a namespace's ephemeralStorage is a share of spec.ephemeralStorage, which is unset",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || self.namespaces.all(e, !has(e.objects) || e.objects.all(k, has(self.objects) && k in self.objects))",message="a namespace's objects are shares of the counts of spec.objects: it may name only kinds spec.objects counts",fieldPath=".namespaces",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.namespaces) || !has(self.objects) || self.objects.all(k, self.namespaces.filter(e, has(e.objects) && k in e.objects).map(e, e.objects[k]).sum() <= self.objects[k] - (k == 'configmaps' ? 1 : k == 'resourcequotas' ? 2 : 0))",message="the namespaces' object counts must add up to at most spec.objects, less what team-<name> holds itself (a ConfigMap, two quotas)",fieldPath=".namespaces",reason=FieldValueInvalid
type TeamSpaceSpec struct {
	// Maximum number of pods in the team's namespace (ResourceQuota
	// team-quota, pods), 1..50. Required.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	Pods int32 `json:"pods"`

	// Total CPU requests allowed in the namespace (ResourceQuota team-quota,
	// requests.cpu), a positive quantity such as "500m", "0.5" or "2".
	// Default "1".
	//
	// +optional
	// +kubebuilder:default="1"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"500m\", \"0.5\" or \"2\"",reason=FieldValueInvalid
	CPU string `json:"cpu,omitempty"`

	// Total memory requests allowed in the namespace (ResourceQuota
	// team-quota, requests.memory), a positive quantity such as "4Gi".
	// Unset, memory is not limited.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"512Mi\" or \"4Gi\"",reason=FieldValueInvalid
	Memory string `json:"memory,omitempty"`

	// Total ephemeral storage in the namespace, requests and limits alike
	// (ResourceQuota team-objects), a positive quantity such as "10Gi";
	// every container gets total/pods as its default request and limit
	// (LimitRange team-defaults). Unset, ephemeral storage is not limited
	// (unless the platform's limits give a default).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"4Gi\"",reason=FieldValueInvalid
	EphemeralStorage string `json:"ephemeralStorage,omitempty"`

	// How many objects of a kind the namespace may hold (ResourceQuota
	// team-objects), by quota name: configmaps (at least 1:
	// kube-root-ca.crt), persistentvolumeclaims, replicationcontrollers,
	// resourcequotas (at least 2: team-quota and team-objects; the quota
	// holds 10 more, so that the platform may make them again before the
	// quota controller has counted a deletion, and an adopted namespace's
	// own quotas besides), secrets, services, services.loadbalancers,
	// services.nodeports; each 0..100000. Unset or empty, objects are not
	// counted (unless the platform's limits give defaults).
	//
	// +optional
	Objects ObjectCounts `json:"objects,omitempty"`

	// The request a container without one gets (LimitRange
	// team-defaults); each defaults to its total divided by pods.
	//
	// +optional
	Defaults *Defaults `json:"defaults,omitempty"`

	// Who administers the namespace (RoleBinding team-owners to ClusterRole
	// admin), at most 32, each name once. system: users and groups and the
	// ServiceAccounts of kube-* and teamspace-system are never bound.
	//
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(o, self.exists_one(p, p.name == o.name))",message="must not list the same name twice (also not for different kinds)",reason=FieldValueInvalid
	Owners []Owner `json:"owners,omitempty"`

	// Pod Security Standard enforced in the namespace (label
	// pod-security.kubernetes.io/enforce, version latest): privileged,
	// baseline or restricted. Default baseline.
	//
	// +optional
	// +kubebuilder:default=baseline
	PodSecurity PodSecurityLevel `json:"podSecurity,omitempty"`

	// With true, NetworkPolicy team-isolation admits ingress only from pods
	// of the same namespace; false omits it. Default true.
	//
	// +optional
	// +kubebuilder:default=true
	NetworkIsolation *bool `json:"networkIsolation,omitempty"`

	// What the platform team gives this TeamSpace beyond what its limits
	// give every team: classes and Gateways its namespace may use besides
	// those the limits' allowed* keys name (hack/deploy/team-use.yaml).
	// Only the platform team (system:masters and the limits' exemptGroups)
	// may set or change it.
	//
	// +optional
	Allow *Allow `json:"allow,omitempty"`

	// The node selector every pod of the namespace carries: filled in where
	// a pod leaves a key out or gives it another value, and held
	// (hack/deploy/team-use.yaml), so that the team's pods run only on the
	// nodes it names. Label keys and values, at most 16. Only the platform
	// team may set or change it.
	//
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 253 && k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="keys must be label keys ([prefix/]name)",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="self.all(k, self[k].matches('^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$'))",message="values must be label values (at most 63 letters, digits, '-', '_' or '.', beginning and ending with a letter or digit)",reason=FieldValueInvalid
	NodeSelector map[string]LabelValue `json:"nodeSelector,omitempty"`

	// More namespaces of the team besides team-<name>, at most 10 (the
	// platform's limits may allow fewer, key maxNamespaces): each entry is
	// namespace team-<name>--<entry name> with its own share of the
	// team's totals: pods and cpu, and of memory, ephemeralStorage and
	// objects where the spec sets them. team-<name> keeps the rest; a
	// share of memory, ephemeralStorage or a count that an entry leaves
	// out is an equal part of that rest, with team-<name>'s. The shares
	// add up to less than the totals, and each namespace's quotas hold its
	// part, so the team's namespaces together never exceed the totals.
	// Each namespace has the team's owners, Pod Security level, isolation
	// (ingress from the team's namespaces) and platform policies. A
	// namespace whose entry is removed is kept with everything in it, its
	// share held back from team-<name>, until it is removed by hand.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=10
	Namespaces []NamespaceEntry `json:"namespaces,omitempty"`
}

// NamespaceEntry is one more namespace of the team and its share of the
// team's totals.
type NamespaceEntry struct {
	// The namespace is team-<TeamSpace>--<name>: a DNS-1123 label without
	// "--" (lower-case letters, digits and '-', beginning and ending with a
	// letter or digit), at most 55 characters and, with the TeamSpace's
	// name, at most 56.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=55
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$') && !self.contains('--')",message="must be a DNS-1123 label (lower-case letters, digits and '-', beginning and ending with a letter or digit) without \"--\"",reason=FieldValueInvalid
	Name string `json:"name"`

	// Its share of spec.pods, 1..49.
	//
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=49
	Pods int32 `json:"pods"`

	// Its share of spec.cpu, a positive quantity.
	//
	// +required
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"500m\"",reason=FieldValueInvalid
	CPU string `json:"cpu"`

	// Its share of spec.memory, a positive quantity; only with spec.memory
	// (unset: an equal part of the rest).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"512Mi\"",reason=FieldValueInvalid
	Memory string `json:"memory,omitempty"`

	// Its share of spec.ephemeralStorage, a positive quantity; only with
	// spec.ephemeralStorage (unset: an equal part of the rest).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"1Gi\"",reason=FieldValueInvalid
	EphemeralStorage string `json:"ephemeralStorage,omitempty"`

	// Its share of counts of spec.objects, of kinds spec.objects counts (a
	// kind left out: an equal part of the rest), but resourcequotas, which
	// every namespace holds whole. The namespace's quota holds its share
	// and, besides, the ConfigMap it holds itself (kube-root-ca.crt).
	//
	// +optional
	Objects ObjectShares `json:"objects,omitempty"`

	// Takes in an existing namespace as this entry's, in place of
	// team-<TeamSpace>--<name>: with its share, it gets the team's owners,
	// quotas, defaults and the platform's copies once the platform team
	// confirms (label platform.labhub.io/adopt=<TeamSpace> on the
	// namespace); until then status.namespaces shows the plan and nothing
	// is written in it. Nothing the team made in it is changed, and
	// taking the entry off, or deleting the TeamSpace, releases the
	// namespace in place. Only the platform team may set or change it.
	//
	// +optional
	Adopt *Adoption `json:"adopt,omitempty"`
}

// Adoption names an existing namespace an entry of spec.namespaces takes in.
type Adoption struct {
	// The existing namespace: neither kube-*, default, teamspace-system nor
	// team-* (those are TeamSpaces' own).
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name (a DNS-1123 label)",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('kube-') && self != 'default' && self != 'teamspace-system'",message="kube-*, default and teamspace-system are the cluster's and the platform's: never adopted",reason=FieldValueInvalid
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('team-')",message="team-* namespaces are TeamSpaces' own: never adopted",reason=FieldValueInvalid
	Namespace string `json:"namespace"`

	// With true, the namespace is held as the team's other namespaces
	// are: its Pod Security level enforced, its isolation, and the
	// platform's policies on what a team may use (it gets the TeamSpace
	// label they select by). Default false: the level is only warned
	// about and audited, the enforce label it had is kept, and none of
	// the platform's policies holds there yet, so that nothing running is
	// refused when it is recreated.
	//
	// +optional
	Enforce bool `json:"enforce,omitempty"`
}

// KindName is an object in a namespace as its kind and name
// ("ResourceQuota team-quota").
type KindName string

// LabelValue is a label's value: at most 63 characters.
//
// +kubebuilder:validation:MaxLength=63
type LabelValue string

// Allow is what one TeamSpace may use beyond the platform's limits, each a
// set of names.
type Allow struct {
	// StorageClasses its PersistentVolumeClaims may name, at most 16.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	StorageClasses []ClassName `json:"storageClasses,omitempty"`

	// PriorityClasses its pods may name, at most 16 (system-node-critical
	// and system-cluster-critical too, only if named).
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	PriorityClasses []ClassName `json:"priorityClasses,omitempty"`

	// RuntimeClasses its pods may name, at most 16.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	RuntimeClasses []ClassName `json:"runtimeClasses,omitempty"`

	// IngressClasses its Ingresses may name, at most 16.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	IngressClasses []ClassName `json:"ingressClasses,omitempty"`

	// Gateways its Gateway API routes may attach to, at most 16, as
	// <namespace>/<name>, or <namespace>/* for every Gateway of a namespace.
	//
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=16
	Gateways []GatewayName `json:"gateways,omitempty"`
}

// ClassName is the name of a cluster-scoped class object (a DNS-1123
// subdomain); it need not exist yet.
//
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type ClassName string

// GatewayName is a Gateway as <namespace>/<name>, or <namespace>/* for
// every Gateway of the namespace.
//
// +kubebuilder:validation:MaxLength=317
// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?/(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)$`
type GatewayName string

// ObjectCounts are how many objects of a kind a namespace may hold, by
// quota name.
//
// +kubebuilder:validation:MaxProperties=8
// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['configmaps', 'persistentvolumeclaims', 'replicationcontrollers', 'resourcequotas', 'secrets', 'services', 'services.loadbalancers', 'services.nodeports'])",message="takes only configmaps, persistentvolumeclaims, replicationcontrollers, resourcequotas, secrets, services, services.loadbalancers, services.nodeports",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!('configmaps' in self) || self['configmaps'] >= 1",message="configmaps must be at least 1 (the namespace holds ConfigMap kube-root-ca.crt, which every pod mounts)",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!('resourcequotas' in self) || self['resourcequotas'] >= 2",message="resourcequotas must be at least 2 (the namespace holds team-quota and team-objects)",reason=FieldValueInvalid
type ObjectCounts map[string]ObjectCount

// ObjectShares are a namespace's shares of the team's object counts, by
// quota name. resourcequotas is not divided: a team cannot make quotas
// (ClusterRole admin holds no write on them), so every namespace holds
// spec.objects.resourcequotas (and room to make the platform's two again,
// spec.objects).
//
// +kubebuilder:validation:MaxProperties=7
// +kubebuilder:validation:XValidation:rule="self.all(k, k in ['configmaps', 'persistentvolumeclaims', 'replicationcontrollers', 'secrets', 'services', 'services.loadbalancers', 'services.nodeports'])",message="takes only configmaps, persistentvolumeclaims, replicationcontrollers, secrets, services, services.loadbalancers, services.nodeports (resourcequotas is not divided: every namespace holds spec.objects.resourcequotas)",reason=FieldValueInvalid
type ObjectShares map[string]ObjectCount

// ObjectCount is how many objects of one kind the namespace may hold,
// 0..100000.
//
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:Maximum=100000
type ObjectCount int64

// PodSecurityLevel is a Pod Security Standard.
//
// +kubebuilder:validation:Enum=privileged;baseline;restricted
type PodSecurityLevel string

// PodSecurityLevels are the values of spec.podSecurity, most open first.
var PodSecurityLevels = []PodSecurityLevel{"privileged", "baseline", "restricted"}

// Defaults are a container's default requests.
type Defaults struct {
	// Default container cpu request, a positive quantity at most spec.cpu.
	// Default spec.cpu divided by spec.pods.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"100m\"",reason=FieldValueInvalid
	CPU *string `json:"cpu,omitempty"`

	// Default container memory request, a positive quantity at most
	// spec.memory (which it needs). Default spec.memory divided by
	// spec.pods.
	//
	// +optional
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="isQuantity(self) && sign(quantity(self)) > 0",message="must be a positive quantity such as \"256Mi\"",reason=FieldValueInvalid
	Memory *string `json:"memory,omitempty"`
}

// Owner is one entry of spec.owners: a RoleBinding subject.
//
// +kubebuilder:validation:XValidation:rule="self.kind == 'ServiceAccount' ? has(self.__namespace__) : !has(self.__namespace__)",message="namespace is required for a ServiceAccount and not allowed for a User or Group",fieldPath=".namespace",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="self.kind != 'ServiceAccount' || self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",message="a ServiceAccount name must be a DNS-1123 subdomain",fieldPath=".name",reason=FieldValueInvalid
// +kubebuilder:validation:XValidation:rule="!has(self.__namespace__) || self.__namespace__.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="must be a namespace name (DNS-1123 label)",fieldPath=".namespace",reason=FieldValueInvalid
type Owner struct {
	// User, Group or ServiceAccount.
	//
	// +required
	// +kubebuilder:validation:Enum=User;Group;ServiceAccount
	Kind string `json:"kind"`

	// The user's, group's or ServiceAccount's name.
	//
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// The ServiceAccount's namespace (ServiceAccount only).
	//
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Namespace string `json:"namespace,omitempty"`
}

// TeamSpaceStatus is written by the engine from the hook's answer;
// observedGeneration says whether the latest spec has been acted on.
// Conditions: Ready always; beside a Ready that is not True, Reconciling
// (on its way) or Stalled (a person must act), with the same reason.
type TeamSpaceStatus struct {
	// The metadata.generation the controller last acted on. Default 0,
	// until it has acted on any.
	//
	// +optional
	// +kubebuilder:default=0
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// The team's namespace, once it exists.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// How much of the quota is used, "used/hard" per resource as the quota
	// reports them (1/4, 100m/2), "-" until it does. Written only while
	// the engine's CompositeController still has the quotas as children
	// (one applied before the DecoratorController teamspace-quotas took
	// them): kept current, each pod created or deleted cost a sync of the
	// TeamSpace. Read the figures live: kubectl teamspace show NAME.
	//
	// +optional
	Usage *Usage `json:"usage,omitempty"`

	// The team's namespaces when it has more than team-<name>
	// (spec.namespaces): each one's state, its use of its share of the
	// totals, and what is wrong with it, team-<name> first; absent without
	// entries. usage above is the team's, all namespaces together.
	//
	// +optional
	// +listType=map
	// +listMapKey=name
	Namespaces []NamespaceStatus `json:"namespaces,omitempty"`

	// The platform's templates (objects in teamspace-system labelled
	// platform.labhub.io/template=true) that select this TeamSpace but are
	// not copied into one of its namespaces, and why; absent when every
	// copy is there. Not part of Ready: the team's own objects are as
	// asked either way.
	//
	// +optional
	// +listType=atomic
	Templates []TemplateStatus `json:"templates,omitempty"`

	// Ready tells whether the namespace and everything in it are as the
	// spec asks; its reason and message say what it waits for. Beside a
	// Ready that is not True, Reconciling (True: on its way) or Stalled
	// (True: a person must act: an invalid spec, a name taken, the
	// requester's allowance, the platform's limits, a reserved owner), with
	// the same reason and message.
	//
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// NamespaceStatus is one of a team's namespaces in status.namespaces.
type NamespaceStatus struct {
	// The namespace's name.
	Name string `json:"name"`
	// The entry of spec.namespaces it is; absent for team-<name>.
	//
	// +optional
	Entry string `json:"entry,omitempty"`
	// Active; Pending (not made yet, or not Active); Terminating;
	// Conflict (the name is someone else's: nothing of the team's is put
	// in it); Kept (its entry was removed and the removal is not
	// confirmed: it keeps everything, and its share); Removing (archived
	// and being deleted).
	State string `json:"state"`
	// Its use of its share, used/hard as its quota reports them; written
	// only as usage above is.
	//
	// +optional
	Usage *Usage `json:"usage,omitempty"`
	// What is wrong with it: a use above its share (nothing is evicted),
	// who holds its name.
	//
	// +optional
	Message string `json:"message,omitempty"`
	// For an adopted namespace (spec.namespaces[].adopt): what adoption
	// finds there and adds.
	//
	// +optional
	Adoption *AdoptionStatus `json:"adoption,omitempty"`
}

// AdoptionStatus is what adopting an existing namespace finds in it and
// what it adds: the plan shown before the platform team confirms, kept
// up to date after.
type AdoptionStatus struct {
	// Confirmed: the namespace carries label platform.labhub.io/adopt
	// naming this TeamSpace; until then nothing is written in it.
	Confirmed bool `json:"confirmed"`
	// How to confirm (or, once confirmed, how to release it).
	//
	// +optional
	Confirm string `json:"confirm,omitempty"`
	// The share it gets, as its quota will hold it ("pods 5, requests.cpu 2").
	//
	// +optional
	Share string `json:"share,omitempty"`
	// What it uses now as the quotas already there count it, against the
	// share ("pods 3/5, requests.cpu 1500m/2"), or why that is unknown.
	//
	// +optional
	Use string `json:"use,omitempty"`
	// What adoption adds (kind name; the platform's copies too), each
	// never put over an object of the team's.
	//
	// +optional
	Adds []KindName `json:"adds,omitempty"`
	// Objects of the names adoption would create that the team already
	// has: left as they are, and not added.
	//
	// +optional
	Taken []KindName `json:"taken,omitempty"`
	// The namespace's Pod Security labels as found ("enforce=privileged"
	// or "none"), and the labels adoption sets.
	//
	// +optional
	PodSecurity string `json:"podSecurity,omitempty"`
	// The team's own quotas, LimitRanges, RoleBindings and NetworkPolicies
	// there (kind name): never changed, and kept on release.
	//
	// +optional
	Own []KindName `json:"own,omitempty"`
}

// TemplateStatus is a template of the platform's not copied into a team
// namespace, in status.templates.
type TemplateStatus struct {
	// The template's kind and name: "ConfigMap ca-bundle".
	Template string `json:"template"`
	// The team namespace it is not copied into; absent when it is copied
	// into none.
	//
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// NameTaken (a child of the TeamSpace's own has that kind and name:
	// it stays), NotCopied (not there yet; if it stays so, an object of
	// that name that is not the platform's holds it, and is kept as it
	// is), InvalidSelector (its annotation
	// platform.labhub.io/teamspace-selector does not parse).
	Reason string `json:"reason"`
	// What is wrong, and what to do.
	Message string `json:"message"`
}

// Usage is team-quota's figures, "used/hard" each.
type Usage struct {
	// Pods used/allowed.
	//
	// +optional
	Pods string `json:"pods"`
	// CPU requests used/allowed.
	//
	// +optional
	CPU string `json:"cpu"`
	// Memory requests used/allowed; set when the quota limits
	// requests.memory (spec.memory).
	//
	// +optional
	Memory string `json:"memory,omitempty"`
}
