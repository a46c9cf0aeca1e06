package v1alpha1

// The names the project defines beside the schema: labels, annotations,
// the platform's namespace and its limits ConfigMap with its keys, and the
// reasons of the Ready condition. Each is spelled here once; the hook, the
// plugin and the tests name them through these constants.
const (
	// Group is the API group of TeamSpaces.
	Group = "platform.labhub.io"
	// Version is the API version of this package.
	Version = "v1alpha1"
	// APIVersion is a TeamSpace's apiVersion.
	APIVersion = Group + "/" + Version
	// Kind is a TeamSpace's kind.
	Kind = "TeamSpace"

	// SystemNamespace is the platform's own namespace: the limits
	// ConfigMap, the templates' bundle, the hook.
	SystemNamespace = "teamspace-system"
	// LimitsName is the platform limits ConfigMap in SystemNamespace, the
	// parameter of the admission policies (hack/deploy/limits.yaml).
	LimitsName = "teamspace-limits"
)

// Labels and annotations a requester's TeamSpace carries.
const (
	// RequesterLabel selects the TeamSpaces of one requester. The API
	// server sets it (hack/deploy/requested-by.yaml) on those of a
	// requester who is not exempt, from the requested-by annotation
	// reduced to a label value; several requesters may share a value, so
	// only TeamSpaces whose annotation is the same are counted together.
	// Without it (an exempt requester) a TeamSpace is not counted.
	RequesterLabel = Group + "/requester"
	// RequestedByAnnotation records who asked for a TeamSpace.
	RequestedByAnnotation = Group + "/requested-by"
)

// Keys of the limits ConfigMap for a requester's allowance (package
// allowance); a key left out or empty bounds nothing.
const (
	KeyMaxTeamSpaces = "maxTeamSpacesPerRequester"
	KeyMaxPods       = "maxPodsPerRequester"
	KeyMaxCPU        = "maxCPUPerRequester"
	KeyMaxMemory     = "maxMemoryPerRequester"
)

// LimitKeys are the keys of the limits ConfigMap that bound one TeamSpace
// of a requester (hack/deploy/limits.yaml checks them), in the order
// `kubectl teamspace allowance` prints them.
var LimitKeys = []string{"maxPods", "maxCPU", "maxMemory", "defaultMemory", "podSecurityLevels", "allowNetworkIsolationOff",
	"maxEphemeralStorage", "maxObjects", "maxNamespaces", "allowedRegistries", "maxTokenLifetime"}

// Reasons of the Ready condition.
const (
	// ReasonAllowanceExceeded: the TeamSpace does not fit its requester's
	// allowance beside their older ones.
	ReasonAllowanceExceeded = "RequesterAllowanceExceeded"
	// ReasonLimitsInvalid: the allowance cannot be read (the ConfigMap is
	// missing, or a key is not a number or quantity); nothing new is given.
	ReasonLimitsInvalid = "LimitsInvalid"
)

// Labels and annotations the platform writes on the objects it makes, or
// reads from objects the platform team writes.
const (
	// TeamSpaceLabel marks children with the TeamSpace they belong to.
	TeamSpaceLabel = Group + "/teamspace"
	// AdoptLabel on an existing namespace names the TeamSpace that may
	// adopt it (spec.namespaces[].adopt): the platform team's confirmation
	// of the plan the TeamSpace's status shows. Only the platform team may
	// set, change or remove it (hack/deploy/adopt.yaml).
	AdoptLabel = Group + "/adopt"
	// NetworkIsolationLabel ("true") marks a team namespace whose TeamSpace
	// asks for isolation: hack/deploy/namespaces.yaml then refuses its owners a
	// NetworkPolicy that admits ingress from outside it (an admission policy
	// cannot read the TeamSpace, it can read the namespace's labels). Absent
	// when isolation is off.
	NetworkIsolationLabel = Group + "/network-isolation"
	// NodeSelectorLabel ("true") marks a team namespace whose TeamSpace has a
	// node selector (its pairs are annotation NodeSelectorAnnotation): the
	// node selector policies of hack/deploy/team-use.yaml select namespaces by
	// it, so that a pod in any other namespace costs them nothing (an
	// admission policy's matchConditions cannot read the namespace). Absent
	// without spec.nodeSelector.
	NodeSelectorLabel = Group + "/node-selector"
	// NodeSelectorAnnotation is spec.nodeSelector as key=value pairs,
	// comma-separated, sorted by key (label keys and values hold neither
	// "," nor "=").
	NodeSelectorAnnotation = Group + "/node-selector"
	// AllowedAnnotationPrefix + storage-classes, priority-classes,
	// runtime-classes, ingress-classes, gateways: the spec.allow lists,
	// comma-separated in spec order.
	AllowedAnnotationPrefix = Group + "/allowed-"
	// QuotasAnnotation on a team namespace's LimitRange is the quotas the
	// namespace holds: a JSON object of quota name (team-quota,
	// team-objects) to spec.hard, in the canonical form the API server
	// stores. Written by Sync.
	QuotasAnnotation = Group + "/quotas"
	// QuotasObservedAnnotation is what the quotas in the namespace hold,
	// in the same form: the spec.hard of each that exists; absent while
	// none does. Written by Quotas.
	QuotasObservedAnnotation = Group + "/quotas-observed"
	// OverShareAnnotation says where team-quota reports more used than
	// its limit (a share lowered below what runs), absent otherwise: it
	// changes only when that starts or ends, never per pod. Written by
	// Quotas.
	OverShareAnnotation = Group + "/over-share"
	// RemoveNamespacesAnnotation on a TeamSpace confirms the removal of extra
	// namespaces: a comma-separated list of entry names. An extra namespace
	// goes only when its entry is gone from spec.namespaces and this
	// annotation names it, as deleting a protected TeamSpace takes lifting its
	// protection first (guardrails.yaml): dropping an entry alone keeps the
	// namespace with everything in it (NamespaceKept). guardrails.yaml refuses
	// an entry that the annotation names, so that a name left in it never
	// deletes a namespace made again later.
	RemoveNamespacesAnnotation = Group + "/remove-namespaces"
	// TemplateLabel marks a template; its value must be "true".
	TemplateLabel = Group + "/template"
	// TemplateSelectorAnnotation, on a template, is a label selector of
	// TeamSpaces ("tier=gold", as kubectl get -l takes it): only those
	// get the copy. Absent or empty: every TeamSpace.
	TemplateSelectorAnnotation = Group + "/teamspace-selector"
	// TemplatesBundleLabel marks the CompositeController that is the
	// bundle's parent (the DecoratorController selects it by this label).
	TemplatesBundleLabel = Group + "/templates-bundle"
)

// The conditions a TeamSpace reports. Ready is always there. Reconciling
// and Stalled follow the "abnormal-true" convention of kstatus
// (sigs.k8s.io/cli-utils, what Flux and kpt wait with), present only while
// they are True: Reconciling while the TeamSpace is on its way (kstatus
// InProgress), Stalled where a person must act (kstatus Failed). Ready
// True has neither (kstatus Current).
const (
	ConditionReady       = "Ready"
	ConditionReconciling = "Reconciling"
	ConditionStalled     = "Stalled"
)

// Reasons of the Ready condition (Reconciling and Stalled carry the same).
// Which one a sync reports when several hold is the order of the hook's
// readiness chain (package teamspace, ready.go).
const (
	ReasonReady       = "Ready"
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonCreating: the namespace is missing or Active and none of the
	// children inside it exist yet (a new TeamSpace, or one whose
	// namespace was deleted).
	ReasonCreating = "Creating"
	// ReasonChildRemoving: a child the spec no longer asks for (owners
	// removed, networkIsolation false) is still there.
	ReasonChildRemoving = "ChildRemoving"
	// ReasonDeleting: the TeamSpace is being deleted (finalize).
	ReasonDeleting = "Deleting"
	// ReasonArchivePending says a deletion, or a namespace's removal,
	// waits for its archive record.
	ReasonArchivePending = "ArchivePending"
	// ReasonOwnerReserved: an owner the hook never binds (a reserved
	// subject) is named in spec.owners.
	ReasonOwnerReserved = "OwnerReserved"

	ReasonNamespacePending     = "NamespacePending"
	ReasonNamespaceTerminating = "NamespaceTerminating"
	ReasonNamespaceNotActive   = "NamespaceNotActive"
	ReasonNamespaceConflict    = "NamespaceConflict"
	// ReasonAdoptionPlanned: an existing namespace to adopt awaits the
	// platform team's confirmation (AdoptLabel); nothing is written in it.
	ReasonAdoptionPlanned = "AdoptionPlanned"
	// ReasonNamespaceOutOfDate: the namespace's labels (Pod Security)
	// differ from the spec.
	ReasonNamespaceOutOfDate = "NamespaceOutOfDate"
	// ReasonNamespaceKept: an extra namespace whose entry was removed from
	// spec.namespaces is kept with everything in it.
	ReasonNamespaceKept = "NamespaceKept"
	// ReasonNamespaceRemoving: a confirmed removal is under way (the
	// namespace is archived and being deleted).
	ReasonNamespaceRemoving = "NamespaceRemoving"

	// Each child type's pending and out-of-date reasons.
	ReasonQuotaPending                = "QuotaPending"
	ReasonQuotaOutOfDate              = "QuotaOutOfDate"
	ReasonLimitRangePending           = "LimitRangePending"
	ReasonLimitRangeOutOfDate         = "LimitRangeOutOfDate"
	ReasonRoleBindingPending          = "RoleBindingPending"
	ReasonRoleBindingOutOfDate        = "RoleBindingOutOfDate"
	ReasonNetworkPolicyPending        = "NetworkPolicyPending"
	ReasonNetworkPolicyOutOfDate      = "NetworkPolicyOutOfDate"
	ReasonClusterRolePending          = "ClusterRolePending"
	ReasonClusterRoleOutOfDate        = "ClusterRoleOutOfDate"
	ReasonClusterRoleConflict         = "ClusterRoleConflict"
	ReasonClusterRoleBindingPending   = "ClusterRoleBindingPending"
	ReasonClusterRoleBindingOutOfDate = "ClusterRoleBindingOutOfDate"
)
