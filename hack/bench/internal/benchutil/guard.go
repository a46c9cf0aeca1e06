package benchutil

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// ClusterMarker is the file hack/cluster.sh leaves in the state directory
// of every control plane it starts (next to admin.kubeconfig).
const ClusterMarker = ".teamspace-cluster"

// ForeignClusterFlag registers -foreign-cluster: without it NewClients
// refuses a kubeconfig that is not in a state directory of hack/cluster.sh.
// The programs create, break and delete hundreds of objects; pointing one at
// a shared cluster by a stale $KUBECONFIG must take a deliberate flag.
func ForeignClusterFlag() *bool {
	return flag.Bool("foreign-cluster", false, "run against a cluster that hack/cluster.sh (hack/up.sh) did not start")
}

// checkOwnCluster is nil when kubeconfig lies next to ClusterMarker.
func checkOwnCluster(kubeconfig string) error {
	dir := filepath.Dir(kubeconfig)
	if _, err := os.Stat(filepath.Join(dir, ClusterMarker)); err != nil {
		return fmt.Errorf("refusing %s: it is not the kubeconfig of a cluster hack/cluster.sh started (no %s beside it); pass -foreign-cluster to run anyway", kubeconfig, ClusterMarker)
	}
	return nil
}
