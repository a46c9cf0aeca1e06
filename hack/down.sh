#!/usr/bin/env bash
# hack/down.sh: stop what hack/up.sh started (Metacontroller, then the hook,
# each by its PID file: hack/up.sh stop), then the control plane
# (hack/cluster.sh down). Honours TEAMSPACE_STATE like hack/up.sh. Logs and
# the archive stay under the state directory unless hack/cluster.sh down
# removes it.
set -euo pipefail

hack=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

"$hack/up.sh" stop
echo "down.sh: control plane: hack/cluster.sh down" >&2
"$hack/cluster.sh" down
