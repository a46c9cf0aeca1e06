# shellcheck shell=bash
# Shared helpers for the scripts under hack/. Source it; it defines
# functions and variables and runs nothing.

# The Kubernetes release the test cluster runs. hack/go.mod pins the same
# version (k8s.io/kubernetes plus every staging module it replaces).
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"

TEAMSPACE_HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034 # for the scripts that source this file
TEAMSPACE_ROOT="$(cd "${TEAMSPACE_HACK_DIR}/.." && pwd)"

# Cache of built binaries, shared by every run and every clone on the machine.
TEAMSPACE_CACHE="${TEAMSPACE_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/teamspace}"
KUBE_BIN_DIR="${TEAMSPACE_CACHE}/k8s-${KUBE_VERSION}/bin"
KUBE_BINARIES=(kube-apiserver kube-controller-manager kubectl)

# compositecontroller_at BASE_URL prints compositecontroller.yaml with its
# hook URLs at BASE_URL (e.g. http://127.0.0.1:8123) instead of the default
# http://127.0.0.1:8080: the one place a hook URL is rewritten (hack/up.sh,
# hack/deploy/install.sh and the tests call it).
compositecontroller_at() {
	sed -e "s#http://127\.0\.0\.1:8080/#${1%/}/#g" "${TEAMSPACE_ROOT}/compositecontroller.yaml"
}

# engine_tuning_flags prints the engine's tuning flags. They live in the
# systemd unit only (METACONTROLLER_TUNING, with the reasons); hack/up.sh
# and hack/bench.sh read them from there.
engine_tuning_flags() {
	local unit="${TEAMSPACE_ROOT}/hack/deploy/systemd/metacontroller.service" flags
	flags=$(sed -n 's/^Environment="METACONTROLLER_TUNING=\(.*\)"$/\1/p' "${unit}")
	[[ -n "${flags}" ]] || die "no METACONTROLLER_TUNING in ${unit}"
	printf '%s\n' "${flags}"
}

log() {
	printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2
}

die() {
	log "ERROR: $*"
	exit 1
}

# as_root runs a command as root, through sudo when we are not root.
as_root() {
	if [[ "$(id -u)" == 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

# apt_install installs Debian packages (apt-get update first).
apt_install() {
	command -v apt-get >/dev/null || die "apt-get not found; install by hand: $*"
	log "installing Debian packages: $*"
	as_root apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -qq --no-install-recommends "$@" >&2
}

# kube_ldflags prints the -ldflags for a release-like build: stripped, with
# the version stamped the way Kubernetes' own build does it (so that
# `kubectl version` and the API server's /version say KUBE_VERSION).
kube_ldflags() {
	local minor flags pkg
	minor="${KUBE_VERSION#v*.}"
	minor="${minor%%.*}"
	flags="-s -w"
	for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
		flags+=" -X ${pkg}.gitVersion=${KUBE_VERSION}"
		flags+=" -X ${pkg}.gitMajor=1 -X ${pkg}.gitMinor=${minor}"
		flags+=" -X ${pkg}.gitTreeState=clean"
		flags+=" -X ${pkg}.buildDate=1970-01-01T00:00:00Z"
	done
	printf '%s' "${flags}"
}

kube_binaries_present() {
	local b
	for b in "${KUBE_BINARIES[@]}"; do
		[[ -x "${KUBE_BIN_DIR}/${b}" ]] || return 1
	done
}

# ensure_kube_binaries builds kube-apiserver, kube-controller-manager and
# kubectl from the hack module into KUBE_BIN_DIR unless they are there.
# Concurrent runs serialise on a lock; the build lands in a temporary
# directory first, so a killed build never leaves half a binary behind.
ensure_kube_binaries() {
	kube_binaries_present && return 0
	mkdir -p "${KUBE_BIN_DIR%/bin}"
	local lock_fd tmp start
	exec {lock_fd}>"${KUBE_BIN_DIR%/bin}/build.lock"
	flock "${lock_fd}"
	if ! kube_binaries_present; then
		start="${SECONDS}"
		log "building Kubernetes ${KUBE_VERSION} binaries into ${KUBE_BIN_DIR} (a cold build takes ~10 minutes on 2 cores)"
		tmp="$(mktemp -d "${KUBE_BIN_DIR%/bin}/bin.tmp.XXXXXX")"
		if ! (cd "${TEAMSPACE_HACK_DIR}" &&
			CGO_ENABLED="${CGO_ENABLED:-0}" go build -trimpath \
				-ldflags="$(kube_ldflags)" -o "${tmp}/" \
				k8s.io/kubernetes/cmd/kube-apiserver \
				k8s.io/kubernetes/cmd/kube-controller-manager \
				k8s.io/kubernetes/cmd/kubectl); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "building the Kubernetes binaries failed"
		fi
		chmod 0755 "${tmp}"
		rm -rf "${KUBE_BIN_DIR}"
		mv "${tmp}" "${KUBE_BIN_DIR}"
		log "built in $((SECONDS - start))s"
	fi
	exec {lock_fd}>&-
}

# ------------------------------------------------------ background processes
# One way, for every script here, to run a process in the background and
# stop it again by its pid file without ever signalling a stranger.

# pid_owned PIDFILE MARKER prints the pid recorded in PIDFILE if that process
# runs and its command line contains MARKER (a state directory, an install
# prefix), so that a recycled pid is never taken for ours.
pid_owned() {
	local pid cmdline
	pid="$(cat "$1" 2>/dev/null)" || return 1
	[[ "${pid}" =~ ^[0-9]+$ && -r "/proc/${pid}/cmdline" ]] || return 1
	# No pipe into grep -q here: under pipefail, grep quitting at the first
	# match can fail the pipeline with tr's SIGPIPE and lose a live process.
	cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
	[[ "${cmdline}" == *"$2"* ]] || return 1
	printf '%s\n' "${pid}"
}

# start_bg PIDFILE LOG CMD... starts CMD in its own session, detached from
# this shell, appending to LOG, and records its pid.
start_bg() {
	local pidfile="$1" logfile="$2"
	shift 2
	printf '\n=== %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"${logfile}"
	setsid "$@" </dev/null >>"${logfile}" 2>&1 &
	printf '%s\n' "$!" >"${pidfile}"
}

# stop_owned PIDFILE MARKER WHAT TIMEOUT_S sends SIGTERM to the process of
# pid_owned, SIGKILL if it is still there after TIMEOUT_S seconds, and
# removes PIDFILE.
stop_owned() {
	local pidfile="$1" marker="$2" what="$3" timeout="$4" pid i
	if pid="$(pid_owned "${pidfile}" "${marker}")"; then
		log "stopping ${what} (pid ${pid})"
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < timeout * 10; i++)); do
			pid_owned "${pidfile}" "${marker}" >/dev/null || break
			sleep 0.1
		done
		if pid_owned "${pidfile}" "${marker}" >/dev/null; then
			log "${what} (pid ${pid}) did not stop in ${timeout}s; killing it"
			kill -KILL "${pid}" 2>/dev/null || true
			sleep 0.2
		fi
		# An orphan's exit is reaped by PID 1, which on some hosts takes a
		# moment: wait (briefly) until the pid is gone from the process table.
		for ((i = 0; i < 50; i++)); do
			[[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null)" == Z ]] || break
			sleep 0.1
		done
	fi
	rm -f "${pidfile}"
}
