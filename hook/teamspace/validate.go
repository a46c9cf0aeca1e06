package teamspace

import (
	"fmt"
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation"
)

// RequestError says why a request cannot be answered at all; the HTTP layer
// turns it into a 4xx. Reason is a short machine-readable word for metrics.
type RequestError struct {
	Reason  string
	Message string
}

func (e *RequestError) Error() string { return e.Message }

func badRequest(reason, format string, args ...any) *RequestError {
	return &RequestError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// uidPattern admits what Kubernetes puts in metadata.uid (a UUID) and nothing
// that could act on a path: the uid becomes part of an archive file name.
var uidPattern = regexp.MustCompile(`^[0-9A-Za-z-]{1,64}$`)

// ValidateName checks that name can become namespace team-<name>, as the CRD
// does; it also guarantees the name is safe as an archive file name.
func ValidateName(name string) error {
	if name == "" {
		return badRequest("InvalidName", "parent metadata.name is empty")
	}
	if len(name) > MaxNameLength {
		return badRequest("InvalidName", "parent metadata.name %q is %d characters; at most %d fit into namespace %s<name>", name, len(name), MaxNameLength, NamespacePrefix)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return badRequest("InvalidName", "parent metadata.name %q is not a DNS-1123 label: %s", name, errs[0])
	}
	return nil
}
