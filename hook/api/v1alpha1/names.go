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
