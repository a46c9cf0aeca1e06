package teamspace

import (
	"fmt"
	"slices"
	"strings"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// NamespaceStatus is one namespace of a team in status.namespaces.
type NamespaceStatus = v1alpha1.NamespaceStatus

// States of a namespace in status.namespaces.
const (
	NamespaceActive      = "Active"
	NamespacePending     = "Pending"
	NamespaceTerminating = "Terminating"
	NamespaceConflict    = "Conflict"
	NamespaceKept        = "Kept"
	NamespaceRemoving    = "Removing"
	// NamespacePlanned: an existing namespace to adopt whose plan waits
	// for the platform team's confirmation (adopt.go).
	NamespacePlanned = "Planned"
)

// namespaceStatuses is status.namespaces: each namespace of the team,
// team-<name> first, then the entries' in spec order, then those no entry
// asks for (kept, or being removed); nil for a TeamSpace with team-<name>
// alone, whose status is what it always was. conflicts holds why each
// unit someone else holds is theirs, removing the units being removed.
func (o *observation) namespaceStatuses(all, unasked []*unit, conflicts, waiting map[*unit]string, removing []*unit) []NamespaceStatus {
	if len(all) == 1 && len(unasked) == 0 {
		return nil
	}
	var out []NamespaceStatus
	for i, u := range append(slices.Clone(all), unasked...) {
		s := NamespaceStatus{Name: u.namespace, Entry: u.entry}
		_, state := o.namespace(u)
		if u.adopted && i < len(all) {
			s.Adoption = o.adoptionStatus(u, waiting[u] == "" && conflicts[u] == "")
			if conflicts[u] != "" {
				s.Adoption.Confirm = "" // someone else holds it: labelling it confirms nothing
			}
		}
		switch {
		case conflicts[u] != "":
			s.State, s.Message = NamespaceConflict, conflicts[u]
			out = append(out, s)
			continue
		case waiting[u] != "":
			s.State, s.Message = NamespacePlanned, waiting[u]
			if state == namespaceMissing || state == namespaceTerminating {
				s.State = NamespacePending
			}
			out = append(out, s)
			continue
		case slices.Contains(removing, u):
			s.State = NamespaceRemoving
		case i >= len(all):
			s.State = NamespaceKept
		case state == namespaceMissing || state == namespaceNotActive:
			s.State = NamespacePending
		case state == namespaceTerminating:
			s.State = NamespaceTerminating
		default:
			s.State = NamespaceActive
		}
		s.Usage, s.Message = o.quotaFigures(u)
		out = append(out, s)
	}
	return out
}

// overShare says where a namespace's quota reports more used than its
// limit: its share was lowered below what runs there. The quota evicts
// nothing; it refuses what would add to it until the use is below.
func overShare(quota *Object) string {
	var over []string
	for _, k := range hardKeys {
		h, okHard := quota.Status.Hard[k]
		u, okUsed := quota.Status.Used[k]
		if okHard && okUsed && u.Cmp(h) > 0 {
			over = append(over, fmt.Sprintf("%s %s", k, fraction(quota.Status.Used, quota.Status.Hard, k)))
		}
	}
	if len(over) == 0 {
		return ""
	}
	return "uses more than its share: " + strings.Join(over, ", ") + "; nothing is evicted, and nothing more is admitted until its use is within it"
}
