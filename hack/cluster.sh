#!/usr/bin/env bash
# A real, local Kubernetes control plane, for people: the one the tests run
# (tests/controlplane, in Go): a datastore (kine over SQLite, k3s's default,
# or Debian's etcd), kube-apiserver and kube-controller-manager on
# 127.0.0.1, no kubelet, no containers. This script only builds what is
# missing and runs that Go harness (tests/controlplane/cmd/controlplane) in
# the background.
#
#   hack/cluster.sh up     build/install what is missing, start, wait until ready
#   hack/cluster.sh env    print the shell lines to use it:
#                            eval "$(hack/cluster.sh env)"
#   hack/cluster.sh down   stop what `up` started (by pid) and remove the state dir
#
# Environment:
#   TEAMSPACE_STATE      state dir (certs, kubeconfigs, data, logs, pid file);
#                        default ${XDG_RUNTIME_DIR:-/tmp}/teamspace-cluster. A
#                        second concurrent cluster just uses another one: ports
#                        are picked free on every `up`.
#   TEAMSPACE_DATASTORE  kine (default) or etcd
#   TEAMSPACE_RESTART_AFTER  a component that exits (killed, crashed) is
#                        started again after this pause, as its systemd unit
#                        would [2s]; 0: never. PIDs in STATE/run/NAME.pid.
#   KUBE_VERSION         Kubernetes release (default in hack/lib.sh)
#   TEAMSPACE_CACHE      cache of the built binaries, default
#                        ${XDG_CACHE_HOME:-$HOME/.cache}/teamspace
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="${TEAMSPACE_STATE:-${XDG_RUNTIME_DIR:-/tmp}/teamspace-cluster}"
MARKER=".teamspace-cluster"
PIDFILE="${STATE}/controlplane.pid"

running() {
	pid_owned "${PIDFILE}" "${STATE}" >/dev/null
}

# remove_state removes the state dir, but only one that `up` made (it holds
# the marker file) or an empty one: TEAMSPACE_STATE set to a wrong directory
# must never cost its contents.
remove_state() {
	[[ -e "${STATE}" ]] || return 0
	if [[ -f "${STATE}/${MARKER}" ]]; then
		rm -rf "${STATE}"
	elif ! rmdir "${STATE}" 2>/dev/null; then
		die "${STATE} is not a cluster state dir (no ${MARKER}) and not empty; not removing it"
	fi
}

cmd_env() {
	[[ -f "${STATE}/env" ]] || die "no cluster in ${STATE}: run hack/cluster.sh up (with the same TEAMSPACE_STATE)"
	cat "${STATE}/env"
}

cmd_down() {
	stop_owned "${PIDFILE}" "${STATE}" "the control plane" 30
	remove_state
	say "cluster in ${STATE} is down"
}

cmd_up() {
	if running; then
		[[ -f "${STATE}/env" ]] || die "a cluster in ${STATE} runs but is not ready: run hack/cluster.sh down first"
		say "cluster in ${STATE} is already up"
		return 0
	fi
	ensure_kube_binaries
	ensure_datastore
	local start="${SECONDS}" i
	remove_state
	mkdir -p "${STATE}/bin"
	touch "${STATE}/${MARKER}"
	(cd "${TEAMSPACE_ROOT}" && go build -o "${STATE}/bin/controlplane" ./tests/controlplane/cmd/controlplane)
	export KUBE_VERSION TEAMSPACE_DATASTORE KINE_VERSION TEAMSPACE_CACHE
	start_bg "${PIDFILE}" "${STATE}/controlplane.log" "${STATE}/bin/controlplane" --state-dir="${STATE}" \
		--restart-after="${TEAMSPACE_RESTART_AFTER:-2s}"
	for ((i = 0; i < 3000; i++)); do
		[[ -f "${STATE}/env" ]] && break
		if ! running; then
			say "the control plane exited; last lines of ${STATE}/controlplane.log:"
			tail -n 40 "${STATE}/controlplane.log" >&2 || true
			die "hack/cluster.sh up failed (logs in ${STATE}/logs)"
		fi
		sleep 0.1
	done
	[[ -f "${STATE}/env" ]] || { cmd_down; die "the control plane was not ready in 300s"; }
	say "cluster up in $((SECONDS - start))s (${TEAMSPACE_DATASTORE}, Kubernetes ${KUBE_VERSION}): state in ${STATE}, logs in ${STATE}/logs"
	cmd_env
}

main() {
	[[ $# -eq 1 ]] || { usage >&2; exit 2; }
	case "$1" in
	-h | --help) usage ;;
	up) cmd_up ;;
	down) cmd_down ;;
	env) cmd_env ;;
	*) die "unknown command '$1' (see --help)" ;;
	esac
}

main "$@"
