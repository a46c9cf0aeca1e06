#!/usr/bin/env bash
# hack/node.sh: a throwaway machine with systemd as PID 1 (systemd-nspawn),
# standing in for a bare k3s server node, to run hack/deploy/install.sh as a
# user would. Its root is a Debian bookworm tree of its own (debootstrap,
# cached as a tarball under $TEAMSPACE_CACHE/node), so nothing on the host
# changes: own /dev and console (--console=pipe), own network namespace with
# loopback only, own mount namespace, its cgroups under one directory that
# `stop` removes.
#
# Usage (TEAMSPACE_NODE_STATE: the node's directory; default ./node-state):
#   hack/node.sh up          build/extract the root if missing, boot, wait for
#                            k3s.service (the control-plane stand-in)
#   hack/node.sh exec CMD... run CMD as root inside, in the checkout
#                            /root/teamspace (a copy of this one)
#   hack/node.sh stop        power off (state kept); `up` boots it again
#   hack/node.sh down        power off and delete the state
#   hack/node.sh tree        only build the cached root tarball
# Environment: METACONTROLLER_BIN (bound read-only at /opt/metacontroller/metacontroller),
# KUBE_VERSION, KINE_VERSION (the binaries are built into the cache by hack/lib.sh).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="${TEAMSPACE_NODE_STATE:-${PWD}/node-state}"
NODE_PACKAGES=systemd,systemd-sysv,dbus,curl,ca-certificates,openssl,procps,iproute2,sqlite3,passwd,git
NODE_SUITE=bookworm
TREE="${TEAMSPACE_CACHE}/node/debian-${NODE_SUITE}-$(printf '%s' "${NODE_PACKAGES}" | sha256sum | cut -c1-12).tar"
NODE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin
CGROUP_NAME="teamspace-node-$(printf '%s' "${STATE}" | sha256sum | cut -c1-12)"
CGROUP_DIRS=()
for h in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified /sys/fs/cgroup; do
	[[ -e "${h}/cgroup.procs" ]] && CGROUP_DIRS+=("${h}/${CGROUP_NAME}")
done

# ensure_tree builds the root tarball once (debootstrap in a private mount
# namespace, so its /proc and /sys mounts never show on the host).
ensure_tree() {
	[[ -s "${TREE}" ]] && return 0
	command -v debootstrap >/dev/null || apt_install debootstrap
	command -v systemd-nspawn >/dev/null || apt_install systemd-container
	mkdir -p "${TREE%/*}"
	local lock_fd tmp start="${SECONDS}"
	exec {lock_fd}>"${TREE}.lock"
	flock "${lock_fd}"
	if [[ ! -s "${TREE}" ]]; then
		tmp="$(mktemp -d "${TREE%/*}/build.XXXXXX")"
		say "debootstrap ${NODE_SUITE} (${NODE_PACKAGES}) into ${tmp}"
		if ! unshare --mount --propagation private debootstrap --variant=minbase \
			--include="${NODE_PACKAGES}" "${NODE_SUITE}" "${tmp}/root" http://deb.debian.org/debian >"${tmp}.log" 2>&1; then
			tail -n 20 "${tmp}.log" >&2
			rm -rf "${tmp}"
			die "debootstrap failed"
		fi
		rm -rf "${tmp}/root/var/cache/apt/archives/"*.deb
		tar -C "${tmp}/root" --numeric-owner -cf "${TREE}.tmp" .
		mv "${TREE}.tmp" "${TREE}"
		rm -rf "${tmp}" "${tmp}.log"
		say "node root built in $((SECONDS - start))s: ${TREE}"
	fi
	exec {lock_fd}>&-
}

# prepare_root extracts the tree and adds the stand-in k3s, the checkout and
# the Metacontroller CRDs (the node has no network).
prepare_root() {
	local root="${STATE}/root"
	[[ -d "${root}/etc" ]] && return 0
	say "extracting the node root into ${root}"
	mkdir -p "${root}"
	tar -C "${root}" --numeric-owner -xf "${TREE}"
	install -D -m 0755 "${TEAMSPACE_HACK_DIR}/node/k3s-standin.sh" "${root}/usr/local/lib/teamspace-node/k3s-standin.sh"
	install -D -m 0644 "${TEAMSPACE_HACK_DIR}/node/k3s.service" "${root}/etc/systemd/system/k3s.service"
	ln -sf /etc/systemd/system/k3s.service "${root}/etc/systemd/system/multi-user.target.wants/k3s.service"
	mkdir -p "${root}/opt/k8s/bin" "${root}/opt/kine/bin" "${root}/opt/metacontroller" "${root}/usr/local/go" "${root}/root/go/pkg/mod"
	ln -sf /opt/k8s/bin/kubectl "${root}/usr/local/bin/kubectl"
	printf 'teamspace-node\n' >"${root}/etc/hostname"
	: >"${root}/etc/machine-id"
	# The checkout, as files (git ls-files: no .git, so no VCS stamping).
	mkdir -p "${root}/root/teamspace"
	(cd "${TEAMSPACE_ROOT}" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "${root}/root/teamspace" -xf -
	local crds
	for crds in "${METACONTROLLER_CRDS:-}" "${TEAMSPACE_ROOT}"/../shared/metacontroller/metacontroller-crds-v1.yaml \
		"${TEAMSPACE_ROOT}"/../../shared/metacontroller/metacontroller-crds-v1.yaml; do
		if [[ -n "${crds}" && -r "${crds}" ]]; then
			install -m 0644 "${crds}" "${root}/root/metacontroller-crds-v1.yaml"
			break
		fi
	done
	cat >"${root}/etc/profile.d/teamspace-node.sh" <<PROFILE
export PATH=${NODE_PATH} GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local
PROFILE
}

nspawn_pid() { pid_owned "${STATE}/nspawn.pid" systemd-nspawn; }

# leader prints the node's PID 1 (as seen from the host).
leader() {
	local pid
	pid="$(nspawn_pid)" || return 1
	pgrep -P "${pid}" -x systemd | head -n1
}

node_exec() {
	local l
	# KUBECONFIG: what k3s's kubectl reads without one.
	l="$(leader)" || die "the node is not running (hack/node.sh up)"
	nsenter --target="${l}" --mount --uts --ipc --net --pid --cgroup --root \
		env -i PATH="${NODE_PATH}" HOME=/root KUBECONFIG=/etc/rancher/k3s/k3s.yaml TERM=dumb LANG=C.UTF-8 GOFLAGS=-mod=mod GOPROXY=off GOTOOLCHAIN=local \
		/bin/sh -c 'cd /root/teamspace 2>/dev/null || cd /; exec "$@"' node-exec "$@"
}

boot() {
	if nspawn_pid >/dev/null; then
		say "node already running"
		wait_booted
		return 0
	fi
	command -v systemd-nspawn >/dev/null || apt_install systemd-container
	ensure_kube_binaries
	ensure_kine
	# The node has no network and gets the host's module cache read-only:
	# the hook's modules must be in it before the boot (a fresh machine
	# has not downloaded them yet).
	(cd "${TEAMSPACE_ROOT}" && go mod download)
	local binds=(
		--bind-ro="${KUBE_BIN_DIR}:/opt/k8s/bin"
		--bind-ro="$(dirname "${KINE_BIN}"):/opt/kine/bin"
		--bind-ro="$(go env GOROOT):/usr/local/go"
		--bind-ro="$(go env GOMODCACHE):/root/go/pkg/mod"
	)
	if [[ -n "${METACONTROLLER_BIN:-}" ]]; then
		binds+=(--bind-ro="$(readlink -f "${METACONTROLLER_BIN}"):/opt/metacontroller/metacontroller")
	fi
	[[ -d /run/systemd/nspawn ]] || touch "${STATE}/remove-run-nspawn"
	local d
	for d in "${CGROUP_DIRS[@]}"; do mkdir -p "${d}"; done
	say "booting the node (${STATE}/console.log)"
	(
		for d in "${CGROUP_DIRS[@]}"; do printf '%s\n' "${BASHPID}" >"${d}/cgroup.procs"; done
		exec setsid unshare --mount --propagation private systemd-nspawn --quiet \
			--directory="${STATE}/root" --machine=teamspace-node --boot \
			--register=no --keep-unit --private-network --console=pipe \
			--link-journal=no --resolv-conf=off --timezone=off "${binds[@]}"
	) </dev/null >>"${STATE}/console.log" 2>&1 &
	printf '%s\n' "$!" >"${STATE}/nspawn.pid"
	wait_booted
}

# wait_booted waits until the node's systemd says running (k3s.service's
# start includes the API server's /readyz).
wait_booted() {
	local i state=""
	for ((i = 0; i < 600; i++)); do
		if leader >/dev/null 2>&1; then
			state="$(node_exec systemctl is-system-running 2>/dev/null || true)"
			[[ "${state}" == running || "${state}" == degraded ]] && break
		fi
		kill -0 "$(cat "${STATE}/nspawn.pid")" 2>/dev/null || { tail -n 30 "${STATE}/console.log" >&2; die "the node exited while booting"; }
		sleep 0.2
	done
	[[ "${state}" == running ]] || { node_exec systemctl --failed >&2 || true; die "node not running after boot (state '${state}')"; }
	say "node up (k3s.service $(node_exec systemctl is-active k3s.service))"
}

# remove_cgroups removes the cgroups nspawn made under ours (payload,
# supervisor), then ours. Processes of the node can outlive nspawn for a
# moment (exiting, or waiting for a late reaper), and a cgroup with tasks
# cannot be removed: so it retries for up to 30 s, killing what is left in
# them, and fails if any remains (a leftover cgroup is a change to the host).
remove_cgroups() {
	local d i left pids
	for ((i = 0; i < 300; i++)); do
		left=0
		for d in "${CGROUP_DIRS[@]}"; do
			[[ -d "${d}" ]] || continue
			mapfile -t pids < <(find "${d}" -name cgroup.procs -exec cat {} + 2>/dev/null)
			((${#pids[@]} == 0)) || kill -KILL "${pids[@]}" 2>/dev/null || true
			find "${d}" -depth -type d -exec rmdir {} + 2>/dev/null || true
			[[ ! -d "${d}" ]] || left=1
		done
		((left)) || return 0
		sleep 0.1
	done
	for d in "${CGROUP_DIRS[@]}"; do
		[[ -d "${d}" ]] || continue
		say "cgroup ${d} is still there; tasks in it:"
		find "${d}" -name cgroup.procs -exec grep -H . {} + >&2 || true
	done
	die "could not remove the node's cgroups"
}

stop() {
	local pid i
	if pid="$(nspawn_pid)"; then
		say "powering the node off"
		node_exec systemctl poweroff >/dev/null 2>&1 || true
		for ((i = 0; i < 600; i++)); do
			nspawn_pid >/dev/null || break
			sleep 0.1
		done
		if nspawn_pid >/dev/null; then
			say "node did not power off in 60s; killing systemd-nspawn"
			kill -KILL "${pid}" 2>/dev/null || true
			sleep 1
		fi
	fi
	rm -f "${STATE}/nspawn.pid"
	remove_cgroups
	if [[ -e "${STATE}/remove-run-nspawn" ]]; then
		rm -rf /run/systemd/nspawn
		rm -f "${STATE}/remove-run-nspawn"
	fi
}

main() {
	case "${1:-}" in -h | --help) usage; return 0 ;; esac
	[[ "$(id -u)" == 0 ]] || die "hack/node.sh needs root (systemd-nspawn)"
	local cmd="${1:-}"
	shift || true
	case "${cmd}" in
	tree) ensure_tree ;;
	up)
		mkdir -p "${STATE}"
		ensure_tree
		prepare_root
		boot
		;;
	exec) node_exec "$@" ;;
	stop) stop ;;
	down)
		stop
		rm -rf "${STATE}"
		;;
	*) die "unknown command '${cmd}'; usage: hack/node.sh up|exec CMD...|stop|down|tree (see --help)" ;;
	esac
}

main "$@"
