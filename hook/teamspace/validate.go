package teamspace

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
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

// Validate checks that the request is one this hook can answer: a TeamSpace
// parent with a name that can become a namespace and a safe uid, and only the
// child types the controller declares. The spec is not checked here.
func (r *Request) Validate() error {
	p := r.Parent
	if p == nil {
		return badRequest("MissingParent", "request has no parent object")
	}
	if p.APIVersion != v1alpha1.APIVersion || p.Kind != v1alpha1.Kind {
		return badRequest("WrongKind", "parent is apiVersion %q kind %q, want apiVersion %q kind %q", p.APIVersion, p.Kind, v1alpha1.APIVersion, v1alpha1.Kind)
	}
	if err := ValidateName(p.Metadata.Name); err != nil {
		return err
	}
	if !uidPattern.MatchString(string(p.Metadata.UID)) {
		return badRequest("InvalidUID", "parent metadata.uid %q is not a Kubernetes uid", p.Metadata.UID)
	}
	for key, objs := range r.Children {
		kind := ""
		if t := childTypeByKey(key); t != nil {
			kind = t.kind
		} else if k := copyKindByKey(key); k != nil {
			kind = k.kind
		} else {
			return badRequest("UnexpectedChild", "children of type %q are not managed by TeamSpace (want one of %s)", key, strings.Join(append(childTypeKeys(), copyKeys()...), ", "))
		}
		for name, o := range objs {
			if o == nil || o.Kind != kind {
				return badRequest("UnexpectedChild", "children[%q][%q] is not a %s", key, name, kind)
			}
		}
	}
	return nil
}

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
