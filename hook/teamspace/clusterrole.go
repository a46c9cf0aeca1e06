package teamspace

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/labhub/teamspace/hook/api/v1alpha1"
)

// OwnerAccessPrefix + name is the ClusterRole and ClusterRoleBinding that
// let the owners of TeamSpace <name> read it (get, and watch it by name)
// and change who its owners are:
// RBAC has no way to say "the TeamSpaces that list you as owner", so each
// TeamSpace gets its own role naming it in resourceNames. list is not in
// it: a list by name is not possible, and the list of all TeamSpaces stays
// the requester's and the viewer's.
const OwnerAccessPrefix = "teamspace-owner-"

// OwnerAccessName is the owners' ClusterRole and ClusterRoleBinding of a
// TeamSpace.
func OwnerAccessName(teamspace string) string { return OwnerAccessPrefix + teamspace }

// OwnerVerbs are what an owner may do with their TeamSpace.
// update and patch change spec.owners only: hack/deploy/owner-access.yaml
// (teamspace-owner-updates) refuses any other change by an owner.
var OwnerVerbs = []string{"get", "watch", "update", "patch"}

// ownerRoleType is the owners' ClusterRole, asked for when the spec lists
// owners. Its rules are compared exactly: a rule added by hand is a
// difference (the engine replaces the list, which has no merge key).
var ownerRoleType = &childType{
	apiVersion:      rbacv1.SchemeGroupVersion.String(),
	kind:            "ClusterRole",
	name:            func(u *unit) string { return OwnerAccessName(u.teamspace) },
	once:            true,
	optional:        true,
	pendingReason:   v1alpha1.ReasonClusterRolePending,
	outOfDateReason: v1alpha1.ReasonClusterRoleOutOfDate,
	newObject:       func() object { return &rbacv1.ClusterRole{} },
	build: func(u *unit, _ *Object) object {
		if len(u.spec.Owners) == 0 {
			return nil
		}
		return &rbacv1.ClusterRole{Rules: []rbacv1.PolicyRule{{
			APIGroups:     []string{v1alpha1.Group},
			Resources:     []string{"teamspaces"},
			ResourceNames: []string{u.teamspace},
			Verbs:         OwnerVerbs,
		}}}
	},
	decode: func(o *Object) (object, error) {
		cr := &rbacv1.ClusterRole{}
		cr.Labels = o.Metadata.Labels
		return cr, decodeRaw(o.Rules, &cr.Rules)
	},
	content: func(obj object) object {
		return &rbacv1.ClusterRole{Rules: obj.(*rbacv1.ClusterRole).Rules}
	},
	ready: func(u *unit) string {
		if len(u.spec.Owners) > 0 {
			return fmt.Sprintf(", owners may read TeamSpace %s and change its owners (ClusterRole %s)", u.teamspace, OwnerAccessName(u.teamspace))
		}
		return ""
	},
}
