package teamspace

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// NamespaceRemoval is the archive record of an extra namespace removed
// from a TeamSpace: written, and durable, before the answer that lets the
// engine delete it (hook/server). Name and UID are the namespace's, so
// that the archive keeps it beside the TeamSpaces' records.
type NamespaceRemoval struct {
	Name         string `json:"name"`
	UID          string `json:"uid"`
	Kind         string `json:"kind"`
	TeamSpace    string `json:"teamspace"`
	TeamSpaceUID string `json:"teamspaceUID"`
	Entry        string `json:"entry"`
	// Quota is what its quotas held as last applied: its share.
	Quota map[string]string `json:"quota,omitempty"`
	// DeletionTimestamp is when the removal was asked for: the newest time
	// the request shows (the TeamSpace's write that confirmed it).
	DeletionTimestamp *metav1.Time `json:"deletionTimestamp,omitempty"`
}

// confirmedEntries are the entry names RemoveNamespacesAnnotation lists.
func confirmedEntries(p *Parent) []string {
	var out []string
	for _, e := range strings.Split(p.Metadata.Annotations[v1alpha1.RemoveNamespacesAnnotation], ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// splitUnasked divides the namespaces no entry asks for into those whose
// removal is confirmed (with their archive records) and those kept.
func (o *observation) splitUnasked(unasked []*unit) (removed []*unit, records []NamespaceRemoval, kept []*unit) {
	confirmed := confirmedEntries(o.parent)
	for _, u := range unasked {
		ns, _ := o.namespace(u)
		// The record is named by the namespace and its uid: neither may
		// act on a path (the engine's are always fine).
		if ns == nil || !slices.Contains(confirmed, u.entry) || !uidPattern.MatchString(string(ns.Metadata.UID)) || len(validation.IsDNS1123Label(u.namespace)) > 0 {
			kept = append(kept, u)
			continue
		}
		removed = append(removed, u)
		records = append(records, o.removalRecord(u, ns))
	}
	return removed, records, kept
}

// removalRecord is the archive record of removed unit u.
func (o *observation) removalRecord(u *unit, ns *Object) NamespaceRemoval {
	at := metav1.NewTime(o.now())
	rec := NamespaceRemoval{
		Name: u.namespace, UID: string(ns.Metadata.UID), Kind: "Namespace",
		TeamSpace: u.teamspace, TeamSpaceUID: o.uid, Entry: u.entry,
		DeletionTimestamp: &at,
	}
	for k, v := range o.keptHard(u) {
		if rec.Quota == nil {
			rec.Quota = map[string]string{}
		}
		rec.Quota[string(k)] = v.String()
	}
	return rec
}

// removingMessages say what each removed namespace is doing.
func removingMessages(removed []*unit, blocked error) []string {
	var out []string
	for _, u := range removed {
		if blocked != nil {
			out = append(out, fmt.Sprintf("namespace %s: its removal is confirmed (%s) and waits for the archive record: %v; nothing is deleted until it is stored (retrying every %d s)",
				u.namespace, v1alpha1.RemoveNamespacesAnnotation, blocked, ArchiveRetrySeconds))
			continue
		}
		out = append(out, fmt.Sprintf("namespace %s is archived and being deleted (entry %s removed, confirmed by %s)", u.namespace, u.entry, v1alpha1.RemoveNamespacesAnnotation))
	}
	return out
}
