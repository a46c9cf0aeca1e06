#!/usr/bin/env bash
# hack/walkthrough.sh: the eight-step proof of every property, against the
# running local setup, with numbers. A thin wrapper: the steps are Go
# subtests over client-go (tests/e2e, TestWalkthrough), each asserting
# against the cluster and writing its JSON evidence:
#
#   1 only the CRD: a TeamSpace gets nothing            -> before.json
#   2 what bumps metadata.generation; status via the main resource -> generation.json
#   3 the CompositeController converges; at rest no churn and no hook call -> reconcile.json
#   4 a new TeamSpace is served with nobody acting      -> newspace.json
#   5 drift: a deleted quota returns, an edited one is reverted -> drift.json
#   6 deletion waits for the finalizer, archives, keeps a foreign finalizer -> cleanup.json
#   7 engine stopped, then started: its list catches up -> catchup.json
#   8 summary                                           -> report.json
#
#   hack/up.sh && eval "$(hack/up.sh env)"
#   hack/walkthrough.sh
#
# Environment: WALKTHROUGH_OUT (evidence, default ./walkthrough-out),
# ENGINE_STOP / ENGINE_START (commands; default hack/up.sh engine-stop / engine-start).
set -euo pipefail
prog=walkthrough.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
no_args "$@"
repo=$TEAMSPACE_ROOT

if [[ -z ${KUBECONFIG:-} || -z ${TEAMSPACE_HOOK_URL:-} || -z ${TEAMSPACE_COMPOSITECONTROLLER:-} ]]; then
	setup=$("$repo/hack/up.sh" env) || die "no local setup: run hack/up.sh first"
	eval "$setup"
fi
out=${WALKTHROUGH_OUT:-./walkthrough-out}
mkdir -p "$out"
WALKTHROUGH_OUT=$(cd "$out" && pwd)
export WALKTHROUGH_OUT WALKTHROUGH_CLUSTER=current KUBECONFIG TEAMSPACE_HOOK_URL TEAMSPACE_COMPOSITECONTROLLER
export TEAMSPACE_ARCHIVE_DIR=${TEAMSPACE_ARCHIVE_DIR:-} TEAMSPACE_STATE=${TEAMSPACE_STATE:-}
cd "$repo"
exec go test ./tests/e2e -count=1 -v -timeout 30m -run '^TestWalkthrough$'

