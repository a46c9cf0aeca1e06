package teamspace

import (
	"github.com/labhub/teamspace/hook/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// The team's several namespaces (spec.namespaces, issue #52): this file
// reads and checks the entries as the schema does, so that a spec that
// bypassed validation is named; unit.go divides the totals among the
// namespaces and Sync answers each (sync.go). What is decided:
//   - names: team-<name>--<entry>; neither a new TeamSpace's name nor an
//     entry holds "--" or begins or ends with "-", so a name splits one
//     way only. A TeamSpace named with "--" before the rule keeps working;
//     its namespace may be another's entry, which that entry then finds
//     taken (NamespaceConflict, the other namespaces are made).
//   - shares: pods and cpu named by every entry; memory, ephemeral storage
//     and each count where the spec sets the total, named or not (not
//     named: an equal part of what the named shares leave, with
//     team-<name>'s); the named add up to less than each total.
//   - objects: every namespace holds a ConfigMap itself; team-<name>'s
//     comes out of the total (as today), an extra namespace's on top of
//     its share. resourcequotas is not divided (objectCount.whole): every
//     namespace holds the count.

// NamespaceShare is one entry of spec.namespaces in canonical form: one
// more namespace of the team (ExtraNamespaceName) and its share of the
// team's totals. Memory, EphemeralStorage and a kind of Objects are what
// the entry names ("" or absent: an equal part, with team-<name>, of what
// the named shares leave).
type NamespaceShare struct {
	Name              string
	Pods, CPU, Memory string
	EphemeralStorage  string
	Objects           map[corev1.ResourceName]int64
	// Adopt is the existing namespace the entry takes in (adopt.go), ""
	// for the entry's own team-<name>--<entry>; Enforce raises the Pod
	// Security level there from warn and audit to enforce.
	Adopt   string
	Enforce bool
}

// entryNamespace is the namespace of an entry: the one it adopts, or its
// own team-<teamspace>--<entry>.
func entryNamespace(teamspace string, s NamespaceShare) string {
	if s.Adopt != "" {
		return s.Adopt
	}
	return ExtraNamespaceName(teamspace, s.Name)
}

// ExtraNamespaceName is the namespace of entry of TeamSpace teamspace:
// team-<teamspace>--<entry>. Neither part may hold the separator (nor
// begin or end with "-"), so no two TeamSpaces' namespaces share a name.
func ExtraNamespaceName(teamspace, entry string) string {
	return NamespacePrefix + teamspace + v1alpha1.NamespaceSeparator + entry
}
