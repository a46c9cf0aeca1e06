package teamspace

import (
	"encoding/json"
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ArchiveRetrySeconds is how soon the engine calls finalize again while the
// archive cannot be written (the store down, a credential refused): often
// enough that a deletion goes on soon after the store is back, rarely enough
// to cost nothing.
const ArchiveRetrySeconds = 10

// FinalizeResyncSeconds is how soon the engine calls finalize again while
// children are still being deleted; namespace deletion is usually done in a
// few seconds and a watch event often comes sooner.
const FinalizeResyncSeconds = 1

// Record is what the archive keeps of a deleted TeamSpace.
type Record struct {
	Name      string `json:"name"`
	UID       string `json:"uid"`
	Pods      *int   `json:"pods"`
	CPU       string `json:"cpu,omitempty"`
	Namespace string `json:"namespace"`
	// Namespaces are all the TeamSpace's namespaces, team-<name> first,
	// when it has more than that one (spec.namespaces; those removed
	// before have records of their own).
	Namespaces []string `json:"namespaces,omitempty"`
	// Released are the namespaces it had adopted (adopt.go): released in
	// place, with everything the team made in them; only the TeamSpace's
	// own objects there are deleted.
	Released          []string     `json:"released,omitempty"`
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
}

// ArchiveRecord is the record finalize must make durable before it may
// answer. A spec that bypassed validation is recorded as far as it parses.
func ArchiveRecord(r *Request) Record {
	m := &r.Parent.Metadata
	rec := Record{Name: m.Name, UID: string(m.UID), Namespace: NamespaceName(m.Name), DeletionTimestamp: m.DeletionTimestamp}
	var own []string
	for _, u := range observe(r).units {
		if u.adopted {
			rec.Released = append(rec.Released, u.namespace)
			continue
		}
		own = append(own, u.namespace)
	}
	if len(own) > 1 {
		rec.Namespaces = own
	}
	var fields struct {
		Pods json.Number `json:"pods"`
		CPU  string      `json:"cpu"`
	}
	if json.Unmarshal(r.Parent.Spec, &fields) == nil {
		if n, err := strconv.Atoi(fields.Pods.String()); err == nil {
			rec.Pods = &n
		}
		rec.CPU = fields.CPU
		if c, err := CanonicalQuantity(fields.CPU); err == nil {
			rec.CPU = c
		}
	}
	return rec
}

// Finalize answers the finalize hook, to be called only once the archive
// record (named record in messages) is durable. It asks for no children, so
// the engine deletes them, and says finalized only when none is observed any
// more: the namespace is gone before the TeamSpace is.
func Finalize(r *Request, record string) *Response { return finalizeWith(r, record, nil) }

// FinalizeBlocked answers the finalize hook when the archive record could not
// be stored (err says why, naming the store): nothing is finalized and
// every observed child is kept as the engine last applied it, so nothing is
// deleted before the record is durable; the status says why the TeamSpace
// waits, and the engine asks again in ArchiveRetrySeconds.
func FinalizeBlocked(r *Request, err error) *Response { return finalizeWith(r, "", err) }

// finalizeWith is the finalize hook in Sync's stages: observe, answer
// (nothing, or everything kept while the archive is blocked), readiness
// (finalizeReadiness) and the response.
func finalizeWith(r *Request, record string, blocked error) *Response {
	o := observe(r)
	resp := newResponse(o)
	done := blocked == nil && !o.hasChildren()
	resp.Finalized = &done
	switch {
	case blocked != nil:
		a := &answered{children: resp.Children}
		keepChildren(o, a, false)
		resp.Children = a.children
		resp.ResyncAfterSeconds = ArchiveRetrySeconds
	case !done:
		resp.ResyncAfterSeconds = FinalizeResyncSeconds
	}
	reason, msg := finalizeReadiness(o, record, blocked)
	resp.Status.Conditions = conditions(o, metav1.ConditionFalse, reason, msg)
	return resp
}

// remainingChildren describes the observed children in a fixed order: the
// namespaces first, team-<name>'s before the others.
func (o *observation) remainingChildren() []string {
	var out []string
	for _, u := range o.units {
		if u.adopted {
			continue // released in place, never deleted
		}
		if ns, s := o.namespace(u); ns != nil {
			// A namespace not Active yet is named Active: it goes as one.
			state := "Active"
			if s == namespaceTerminating {
				state = "Terminating"
			}
			out = append(out, fmt.Sprintf("namespace %s (%s)", ns.Metadata.Name, state))
		}
	}
	for _, k := range append(childTypeKeys(), copyKeys()...) {
		if k == namespaceType.key {
			continue
		}
		kind := ""
		if t := childTypeByKey(k); t != nil {
			kind = t.kind
		} else {
			kind = copyKindByKey(k).kind
		}
		for _, key := range o.childKeys(k) {
			out = append(out, fmt.Sprintf("%s %s", kind, key))
		}
	}
	return out
}
