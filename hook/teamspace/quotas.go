package teamspace

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// A team namespace's quotas are not the CompositeController's children but
// a DecoratorController's (teamspace-quotas in compositecontroller.yaml),
// whose parent is the namespace's LimitRange team-defaults. The quota
// controller rewrites a quota's status on every pod created or deleted in
// the namespace, and the engine syncs the parent of a child on every
// change of it, status included: as a child of the TeamSpace, each pod
// event cost a sync of the TeamSpace, and every CompositeController sync
// reads the TeamSpace live (a GET) before it compares its status. A
// DecoratorController's sync compares the parent from its cache and writes
// nothing when nothing changed: a pod event now costs the engine one call
// of this hook and no request (docs/design/quotas-via-limitrange.md).
//
// Why the LimitRange and not the namespace (issue #55): the engine finds a
// DecoratorController's attachments by listing every object of their kind
// in the parent's namespace, every quota of the cluster for a namespace
// parent (O(N) per sync, O(N²) for a fleet being created); and a change
// of a namespace is matched against every TeamSpace's related objects
// (customize.go), so each report written on it cost O(N) too. A LimitRange
// is namespaced and no TeamSpace's related object. Its quotas live and die
// with it: a LimitRange deleted by hand takes them along (the garbage
// collector), and both come back at once, as every child does.
//
// The TeamSpace's sync stays the one place that decides: it writes the
// quotas each namespace must hold into its LimitRange (QuotasAnnotation),
// and this hook makes them, reporting back on the LimitRange what the
// quotas hold (QuotasObservedAnnotation), which Sync reads as it read the
// quotas themselves (Ready waits for them, an invalid spec keeps them as
// last applied, a kept namespace's share stays reserved). A parent
// namespace (the DecoratorController as issue #54 shipped it) is still
// answered, so that the hook may be upgraded first.
const (
	// QuotasControllerName is the DecoratorController that makes the
	// quotas.
	QuotasControllerName = "teamspace-quotas"
)

// quotaNames are the quotas a team namespace may hold.
var quotaNames = []string{QuotaName, ObjectsQuotaName}

// quotasOf reads an annotation of quotas (QuotasAnnotation's form).
func quotasOf(annotations map[string]string, key string) (map[string]corev1.ResourceList, error) {
	raw, ok := annotations[key]
	if !ok {
		return nil, fmt.Errorf("no annotation %s", key)
	}
	var quotas map[string]corev1.ResourceList
	if err := json.Unmarshal([]byte(raw), &quotas); err != nil {
		return nil, fmt.Errorf("annotation %s does not parse: %v", key, err)
	}
	for name := range quotas {
		if !slices.Contains(quotaNames, name) {
			return nil, fmt.Errorf("annotation %s names quota %q (want %s)", key, name, strings.Join(quotaNames, " or "))
		}
	}
	return quotas, nil
}

// encodeQuotas is the annotation form of quotas: JSON with sorted keys and
// the quantities as the API server stores them, so that the same quotas
// always read the same (a different string would be a write).
func encodeQuotas(quotas map[string]corev1.ResourceList) string {
	b, err := json.Marshal(quotas)
	if err != nil {
		// ResourceLists always encode.
		panic(fmt.Sprintf("teamspace: cannot encode quotas: %v", err))
	}
	return string(b)
}
