#!/usr/bin/env bash
# hack/down.sh: stop what hack/up.sh started (Metacontroller, then the hook,
# each by its PID file: hack/up.sh stop), then the control plane
# (hack/cluster.sh down). Honours TEAMSPACE_STATE like hack/up.sh. Logs and
# the archive stay under the state directory unless hack/cluster.sh down
# removes it.
set -euo pipefail
prog=down.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
no_args "$@"

"$TEAMSPACE_HACK_DIR/up.sh" stop
say "control plane: hack/cluster.sh down"
"$TEAMSPACE_HACK_DIR/cluster.sh" down
