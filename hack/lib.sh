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

# The datastore of the test control plane: kine over SQLite (k3s's default),
# or Debian's etcd-server.
TEAMSPACE_DATASTORE="${TEAMSPACE_DATASTORE:-kine}"
KINE_VERSION="${KINE_VERSION:-v0.17.5}"
KINE_BIN="${TEAMSPACE_CACHE}/kine-${KINE_VERSION}/bin/kine"

# The S3 server of the archive's tests.
VERSITYGW_VERSION="${VERSITYGW_VERSION:-v1.8.0}"
VERSITYGW_BIN="${TEAMSPACE_CACHE}/versitygw-${VERSITYGW_VERSION}/bin/versitygw"

# The Go linter of hack/test.sh's verify step (honnef.co/go/tools), pinned
# like every tool here: a new release may find new things.
STATICCHECK_VERSION="${STATICCHECK_VERSION:-v0.8.2}"
STATICCHECK_BIN="${TEAMSPACE_CACHE}/staticcheck-${STATICCHECK_VERSION}/bin/staticcheck"

# controller-gen (sigs.k8s.io/controller-tools), which writes crd.yaml from
# the API's Go types (hack/generate.sh); pinned, as its output is checked in.
CONTROLLER_GEN_VERSION="${CONTROLLER_GEN_VERSION:-v0.23.0}"
CONTROLLER_GEN_BIN="${TEAMSPACE_CACHE}/controller-gen-${CONTROLLER_GEN_VERSION}/bin/controller-gen"

# Prometheus' promtool, which checks and unit-tests the alert rules
# (hack/deploy/prometheus), and kube-state-metrics, which the
# custom-resource-state configuration there is tested against: built from
# their modules into the cache (ensure_promtool, ensure_kube_state_metrics).
PROMETHEUS_VERSION="${PROMETHEUS_VERSION:-v0.316.0}"
PROMTOOL_BIN="${TEAMSPACE_CACHE}/promtool-${PROMETHEUS_VERSION}/bin/promtool"
KUBE_STATE_METRICS_VERSION="${KUBE_STATE_METRICS_VERSION:-v2.20.0}"
KUBE_STATE_METRICS_BIN="${TEAMSPACE_CACHE}/kube-state-metrics-${KUBE_STATE_METRICS_VERSION}/bin/kube-state-metrics"

# The Metacontroller release the project runs and is tested with: the one
# place it is pinned (hack/deploy/install.sh's default CRDs, the test
# engine ensure_metacontroller builds, hack/bench.sh's machine.txt).
METACONTROLLER_VERSION="${METACONTROLLER_VERSION:-v4.17.2}"
METACONTROLLER_REPO="${METACONTROLLER_REPO:-https://github.com/metacontroller/metacontroller}"
METACONTROLLER_CACHE="${TEAMSPACE_CACHE}/metacontroller-${METACONTROLLER_VERSION}"

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

# ------------------------------------------------------------------ messages
# Every script here speaks the same way: "PROG: message" on stderr, one line
# per error ("PROG: error: ..."), so that a caller or a test can match it.
# A script sets prog before sourcing this file (default: its file name).

: "${prog:=$(basename "$0")}"

say() { printf '%s: %s\n' "${prog}" "$*" >&2; }
warn() { printf '%s: WARNING: %s\n' "${prog}" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "${prog}" "$*" >&2
	exit 1
}

# usage prints the running script's header comment (line 2 up to `set -euo`).
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

# other_arg ARG ends a script's argument loop: -h/--help prints the usage,
# anything else is refused in one line.
other_arg() {
	case $1 in
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
}

# no_args is the argument handling of a script that takes none: -h/--help
# prints the usage, anything else is refused in one line.
no_args() {
	(($# == 0)) || other_arg "$1"
	(($# <= 1)) || die "unknown argument '$2' (see --help)"
}

# one_line joins lines with ", ".
one_line() { paste -sd, - | sed 's/,/, /g'; }

# port_in_use HOST:PORT (or PORT, on 127.0.0.1): something accepts TCP
# connections there.
port_in_use() {
	local addr=$1
	[[ ${addr} == *:* ]] || addr=127.0.0.1:${addr}
	(exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null
}

# wait_http URL SECONDS [ALIVE_CMD...] waits until URL answers 2xx. Without
# an answer it returns 1 after SECONDS, or 2 as soon as ALIVE_CMD (when
# given: is the process that should answer still there?) fails. The caller
# says what went wrong, with its own hint (a log, a journal).
wait_http() {
	local url=$1 end=$((SECONDS + $2))
	shift 2
	command -v curl >/dev/null || die "curl not found: it is needed to check ${url}"
	while ((SECONDS < end)); do
		curl -fsS -o /dev/null --max-time 1 "${url}" 2>/dev/null && return 0
		if (($# > 0)) && ! "$@"; then
			return 2
		fi
		sleep 0.1
	done
	return 1
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
	say "installing Debian packages: $*"
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

# hack_kube_version prints the k8s.io/kubernetes version hack/go.mod pins.
hack_kube_version() {
	awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ {print $2; exit}' "${TEAMSPACE_HACK_DIR}/go.mod"
}

# kube_build_module prints the directory of the Go module that builds
# KUBE_VERSION: hack/ itself for the version it pins, else a throwaway module
# in the cache made by mapping k8s.io/kubernetes' own staging replaces
# (./staging/src/k8s.io/X) mechanically to k8s.io/X v0.<minor>.<patch>.
kube_build_module() {
	if [[ "${KUBE_VERSION}" == "$(hack_kube_version)" ]]; then
		printf '%s\n' "${TEAMSPACE_HACK_DIR}"
		return 0
	fi
	local dir="${KUBE_BIN_DIR%/bin}/module" staging gomod mod
	staging="v0.${KUBE_VERSION#v1.}"
	if [[ ! -f "${dir}/go.sum" ]]; then
		mkdir -p "${dir}"
		gomod="$(cd "${dir}" && GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@${KUBE_VERSION}" |
			awk -F'"' '$2 == "GoMod" {print $4}')" || return 1
		[[ -r "${gomod}" ]] || { say "k8s.io/kubernetes@${KUBE_VERSION}: no go.mod downloaded"; return 1; }
		{
			printf '// Generated by hack/lib.sh to build Kubernetes %s; throwaway.\n' "${KUBE_VERSION}"
			printf 'module teamspace-kube-build\n\ngo %s\n\n' "$(go env GOVERSION | sed 's/^go//')"
			printf 'require k8s.io/kubernetes %s\n\nreplace (\n' "${KUBE_VERSION}"
			awk '$2 == "=>" && $3 ~ /^\.\/staging\// {print $1}' "${gomod}" |
				while read -r mod; do
					printf '\t%s => %s %s\n' "${mod}" "${mod}" "${staging}"
				done
			printf ')\n'
		} >"${dir}/go.mod"
		printf 'package tools\n\nimport (\n\t_ "k8s.io/kubernetes/cmd/kube-apiserver"\n\t_ "k8s.io/kubernetes/cmd/kube-controller-manager"\n\t_ "k8s.io/kubernetes/cmd/kubectl"\n)\n' >"${dir}/tools.go"
		(cd "${dir}" && GOFLAGS=-mod=mod GOWORK=off go mod tidy) || return 1
	fi
	printf '%s\n' "${dir}"
}

# ensure_kube_binaries builds kube-apiserver, kube-controller-manager and
# kubectl of KUBE_VERSION into KUBE_BIN_DIR unless they are there (from the
# hack module, or for another version from kube_build_module's).
# Concurrent runs serialise on a lock; the build lands in a temporary
# directory first, so a killed build never leaves half a binary behind.
ensure_kube_binaries() {
	kube_binaries_present && return 0
	mkdir -p "${KUBE_BIN_DIR%/bin}"
	local lock_fd tmp start module
	exec {lock_fd}>"${KUBE_BIN_DIR%/bin}/build.lock"
	flock "${lock_fd}"
	if ! kube_binaries_present; then
		start="${SECONDS}"
		say "building Kubernetes ${KUBE_VERSION} binaries into ${KUBE_BIN_DIR} (a cold build takes ~10 minutes on 2 cores)"
		tmp="$(mktemp -d "${KUBE_BIN_DIR%/bin}/bin.tmp.XXXXXX")"
		if ! module="$(kube_build_module)" || ! (cd "${module}" &&
			GOWORK=off CGO_ENABLED="${CGO_ENABLED:-0}" go build -trimpath \
				-ldflags="$(kube_ldflags)" -o "${tmp}/" \
				k8s.io/kubernetes/cmd/kube-apiserver \
				k8s.io/kubernetes/cmd/kube-controller-manager \
				k8s.io/kubernetes/cmd/kubectl); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "building the Kubernetes ${KUBE_VERSION} binaries failed"
		fi
		chmod 0755 "${tmp}"
		rm -rf "${KUBE_BIN_DIR}"
		mv "${tmp}" "${KUBE_BIN_DIR}"
		say "built in $((SECONDS - start))s"
	fi
	exec {lock_fd}>&-
}

# go_tool_cached BIN MODULE@VERSION CGO [TAGS]: the tool BIN (DIR/bin/<name>
# in the cache) is there, or is built by go_install_cached into DIR.
go_tool_cached() {
	[[ -x "$1" ]] && return 0
	go_install_cached "${1%/bin/*}" "$2" "$3" "${4:-}"
}

# go_install_cached DIR MODULE@VERSION CGO [TAGS]: go install MODULE (with
# the build tags TAGS, comma-separated) into DIR/bin unless something is
# there already. Concurrent runs serialise on a lock; the build lands in a
# temporary directory first, so a killed build never leaves half a binary
# behind.
go_install_cached() {
	local dir=$1 pkg=$2 cgo=$3 tags=${4:-} lock_fd tmp start
	[[ -n "$(ls -A "${dir}/bin" 2>/dev/null)" ]] && return 0
	mkdir -p "${dir}"
	exec {lock_fd}>"${dir}/build.lock"
	flock "${lock_fd}"
	if [[ -z "$(ls -A "${dir}/bin" 2>/dev/null)" ]]; then
		start="${SECONDS}"
		say "building ${pkg} into ${dir}/bin (go install)"
		tmp="$(mktemp -d "${dir}/bin.tmp.XXXXXX")"
		if ! (cd "${tmp}" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED="${cgo}" GOBIN="${tmp}" \
			go install -trimpath -tags="${tags}" -ldflags="-s -w" "${pkg}"); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "building ${pkg} failed"
		fi
		chmod 0755 "${tmp}"
		rm -rf "${dir:?}/bin"
		mv "${tmp}" "${dir}/bin"
		say "built in $((SECONDS - start))s"
	fi
	exec {lock_fd}>&-
}

# ensure_kine builds kine (k3s's datastore: an etcd API over SQLite) into
# KINE_BIN unless it is there. cgo is needed for SQLite (mattn/go-sqlite3),
# so a C compiler too.
ensure_kine() {
	[[ -x "${KINE_BIN}" ]] && return 0
	command -v gcc >/dev/null || apt_install gcc libc6-dev
	go_tool_cached "${KINE_BIN}" "github.com/k3s-io/kine@${KINE_VERSION}" 1
}

# ensure_staticcheck builds staticcheck into STATICCHECK_BIN unless it is
# there (about a minute on 2 cores, once).
ensure_staticcheck() {
	go_tool_cached "${STATICCHECK_BIN}" "honnef.co/go/tools/cmd/staticcheck@${STATICCHECK_VERSION}" 0
}

# ensure_controller_gen builds controller-gen into CONTROLLER_GEN_BIN unless
# it is there (about a minute on 2 cores, once).
ensure_controller_gen() {
	go_tool_cached "${CONTROLLER_GEN_BIN}" "sigs.k8s.io/controller-tools/cmd/controller-gen@${CONTROLLER_GEN_VERSION}" 0
}

# generate_crd DIR writes the CRD of the API's Go types (hook/api/...) into
# DIR/crd.yaml, with hack/crd-header.txt on top.
generate_crd() {
	local out
	ensure_controller_gen
	out="$(mktemp -d)"
	(cd "${TEAMSPACE_ROOT}" && "${CONTROLLER_GEN_BIN}" crd:headerFile=hack/crd-header.txt \
		paths=./hook/api/... output:crd:artifacts:config="${out}") || {
		rm -rf "${out}"
		die "controller-gen ${CONTROLLER_GEN_VERSION} failed on hook/api"
	}
	mv "${out}/platform.labhub.io_teamspaces.yaml" "${1}/crd.yaml"
	rm -rf "${out}"
}

# ensure_promtool builds Prometheus' promtool into PROMTOOL_BIN unless it is
# there. Without the service discoveries (build tag remove_all_sd, which
# Prometheus provides for builds that want fewer of them): the tests run
# `promtool check rules` and `promtool test rules`, which never discover
# a target, and the cloud SDKs the discoveries bring (AWS, Azure, GCE,
# OpenStack, ...) were most of its cold build.
ensure_promtool() {
	go_tool_cached "${PROMTOOL_BIN}" "github.com/prometheus/prometheus/cmd/promtool@${PROMETHEUS_VERSION}" 0 remove_all_sd
}

# ensure_kube_state_metrics builds kube-state-metrics into
# KUBE_STATE_METRICS_BIN unless it is there.
ensure_kube_state_metrics() {
	go_tool_cached "${KUBE_STATE_METRICS_BIN}" "k8s.io/kube-state-metrics/v2@${KUBE_STATE_METRICS_VERSION}" 0
}

# ensure_versitygw builds Versity's S3 gateway (Apache-2.0; its posix
# backend keeps buckets as directories) into VERSITYGW_BIN: the real S3
# server the archive's S3 tests run on loopback (tests/s3store).
ensure_versitygw() {
	go_tool_cached "${VERSITYGW_BIN}" "github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}" 0
}

# ensure_datastore installs what TEAMSPACE_DATASTORE needs: kine (built) or
# Debian's etcd-server.
ensure_datastore() {
	case "${TEAMSPACE_DATASTORE}" in
	kine) ensure_kine ;;
	etcd)
		command -v etcd >/dev/null || apt_install etcd-server
		command -v etcd >/dev/null || die "etcd still not on PATH after installing etcd-server"
		;;
	*) die "TEAMSPACE_DATASTORE=${TEAMSPACE_DATASTORE}: want kine or etcd" ;;
	esac
}

# ----------------------------------------------------------------- the engine
# Metacontroller's module path is "metacontroller", so `go install
# MODULE@VERSION` cannot fetch it: it is built from a source tree at the
# pinned tag, as a clone of that tag is built anywhere.

# metacontroller_src_version DIR prints the tag of the Metacontroller tree
# DIR: the tag its git checkout is at, else the one its SOURCE file names
# (../shared/metacontroller/<version> has one), else nothing.
metacontroller_src_version() {
	local dir=$1 top
	if top=$(git -C "${dir}" rev-parse --show-toplevel 2>/dev/null) &&
		[[ "$(cd "${top}" && pwd -P)" == "$(cd "${dir}" && pwd -P)" ]] &&
		git -C "${dir}" describe --tags --exact-match HEAD 2>/dev/null; then
		return 0
	fi
	if [[ -r "${dir}/SOURCE" ]]; then
		sed -n 's/.*(tag \(v[0-9][^,) ]*\).*/\1/p' "${dir}/SOURCE" | head -1
	fi
}

# metacontroller_bin_version BIN prints the version a Metacontroller binary
# was stamped with (-X main.version=..., as its release builds and
# ensure_metacontroller do; "v" added where a release left it out), or
# nothing when it was not. -trimpath keeps -ldflags out of the build info,
# so the binary is asked: it logs its version first, then stops at the
# kubeconfig it cannot read (nothing is served or contacted before that).
metacontroller_bin_version() {
	local v
	v=$(timeout 10 "$1" --kubeconfig=/nonexistent/teamspace-version-probe --metrics-address=0 \
		--health-probe-bind-address=0 --pprof-address=0 </dev/null 2>&1 |
		sed -n 's/.*"msg":"Configuration information".*"version":"\([^"]*\)".*/\1/p' | head -1) || true
	[[ -n "${v}" && "${v}" != "No version provided" ]] || return 0
	[[ "${v}" == v* ]] || v="v${v}"
	printf '%s\n' "${v}"
}

# check_metacontroller_bin BIN WHAT dies in one line (naming WHAT) unless BIN
# is an executable file, a Go program whose main package is Metacontroller's
# and whose stamped version, where it has one, is METACONTROLLER_VERSION.
check_metacontroller_bin() {
	local bin=$1 what=$2 v main
	[[ -f "${bin}" && -x "${bin}" ]] || die "${what} is not an executable file"
	command -v go >/dev/null || die "go not found: it is needed to check ${what}"
	main=$(go version -m "${bin}" 2>/dev/null | awk '$1 == "path" {print $2; exit}') || main=""
	[[ -n "${main}" ]] || die "${what} is not a Go program (go version -m cannot read it), so not Metacontroller"
	[[ "${main}" == */pkg/cmd/metacontroller || "${main}" == metacontroller ]] ||
		die "${what} is the Go program ${main}, not Metacontroller (.../pkg/cmd/metacontroller)"
	v=$(metacontroller_bin_version "${bin}")
	if [[ -z "${v}" ]]; then
		say "${what}: it does not say its version (not stamped at build); taken as ${METACONTROLLER_VERSION}"
	elif [[ "${v}" == "${METACONTROLLER_VERSION}+proposed."* && -n "${TEAMSPACE_PROPOSED_ENGINE_OK:-}" ]]; then
		say "${what}: Metacontroller ${v}, the stock source with the proposed patches (hack/bench.sh only)"
	elif [[ "${v}" == *+* ]]; then
		refuse_changed_engine "${what}" "${v}"
	elif [[ "${v}" != "${METACONTROLLER_VERSION}" ]]; then
		die "${what} is Metacontroller ${v}, not ${METACONTROLLER_VERSION} (the version hack/lib.sh pins)"
	fi
}

# refuse_changed_engine WHAT VERSION dies saying that WHAT, a build stamped
# VERSION (<tag>+<changes>, as ensure_proposed_engine stamps the engine with
# the patches proposed upstream), is not the stock engine that the suite and
# every install path run.
refuse_changed_engine() {
	die "$1 is Metacontroller $2, a build with changes (hack/bench/engine-patches are for hack/bench.sh only): the suite and every install path run the stock ${METACONTROLLER_VERSION}"
}

# build_metacontroller SRC WHAT [DIR [STAMP]] builds SRC's
# ./pkg/cmd/metacontroller into DIR/bin [METACONTROLLER_CACHE] (static, so
# that it also runs inside the node of hack/node.sh; the version stamped as
# its release does, STAMP [METACONTROLLER_VERSION]). A tree that is not
# Metacontroller's, of another version or that does not build dies in one
# line naming WHAT.
build_metacontroller() {
	local src=$1 what=$2 dir=${3:-${METACONTROLLER_CACHE}} stamp=${4:-${METACONTROLLER_VERSION}} v tmp log start
	if [[ ! -f "${src}/go.mod" || ! -d "${src}/pkg/cmd/metacontroller" ]] ||
		! grep -qx 'module metacontroller' "${src}/go.mod"; then
		die "${what} is not a Metacontroller source tree (want go.mod of module metacontroller and pkg/cmd/metacontroller)"
	fi
	v=$(metacontroller_src_version "${src}")
	[[ -n "${v}" ]] || die "${what}: cannot tell its version (not a git checkout of a tag, no SOURCE naming one); want ${METACONTROLLER_VERSION}"
	[[ "${v}" == "${METACONTROLLER_VERSION}" ]] || die "${what} is Metacontroller ${v}, not ${METACONTROLLER_VERSION} (the version hack/lib.sh pins)"
	start="${SECONDS}"
	say "building Metacontroller ${stamp} from ${src} into ${dir}/bin (~4 minutes cold on 2 cores)"
	mkdir -p "${dir}"
	tmp="$(mktemp -d "${dir}/bin.tmp.XXXXXX")"
	log="${dir}/build.log"
	if ! (cd "${src}" && GOWORK=off CGO_ENABLED=0 go build -trimpath \
		-ldflags="-s -w -X main.version=${stamp}" \
		-o "${tmp}/metacontroller" ./pkg/cmd/metacontroller) >"${log}" 2>&1; then
		rm -rf "${tmp}"
		die "${what} does not build (go build ./pkg/cmd/metacontroller: $(tail -n 1 "${log}"); all of it in ${log})"
	fi
	chmod 0755 "${tmp}"
	rm -rf "${dir:?}/bin"
	mv "${tmp}" "${dir}/bin"
	say "built in $((SECONDS - start))s"
}

# metacontroller_source sets METACONTROLLER_SOURCE and METACONTROLLER_SOURCE_WHAT
# to the first source tree of the pinned tag there is: METACONTROLLER_SRC if
# set, ../shared/metacontroller/<version> beside the checkout when it exists,
# else a shallow clone of the tag from METACONTROLLER_REPO into the cache
# (returns 1 with the reason in METACONTROLLER_MISSING when that fails).
metacontroller_source() {
	local shared="${TEAMSPACE_ROOT}/../shared/metacontroller/${METACONTROLLER_VERSION}"
	if [[ -n "${METACONTROLLER_SRC:-}" ]]; then
		[[ -d "${METACONTROLLER_SRC}" ]] || die "METACONTROLLER_SRC=${METACONTROLLER_SRC} is not a directory"
		METACONTROLLER_SOURCE="${METACONTROLLER_SRC}"
		METACONTROLLER_SOURCE_WHAT="METACONTROLLER_SRC=${METACONTROLLER_SRC}"
	elif [[ -d "${shared}" ]]; then
		METACONTROLLER_SOURCE="$(cd "${shared}" && pwd)"
		METACONTROLLER_SOURCE_WHAT="${METACONTROLLER_SOURCE}"
	else
		clone_metacontroller || return
		METACONTROLLER_SOURCE="${METACONTROLLER_CACHE}/src"
		METACONTROLLER_SOURCE_WHAT="${METACONTROLLER_CACHE}/src (cloned)"
	fi
}

# ensure_metacontroller sets and exports METACONTROLLER_BIN, the engine that
# the tests, hack/up.sh and hack/bench.sh run:
#   - METACONTROLLER_BIN when set;
#   - else METACONTROLLER_CACHE/bin/metacontroller, built once (under a lock)
#     from the first source tree of: METACONTROLLER_SRC if set,
#     ../shared/metacontroller/<version> beside the checkout when it exists,
#     a shallow clone of the tag from METACONTROLLER_REPO when the network
#     allows.
# Bad input (a binary that is not executable or is of another version, a
# tree of another version or that does not build) dies in one line naming
# the path. With no engine to be had it returns 1, the reason in
# METACONTROLLER_MISSING: the caller decides whether that is fatal.
ensure_metacontroller() {
	# shellcheck disable=SC2034 # read by the callers (hack/test.sh, up.sh, bench.sh)
	METACONTROLLER_MISSING=
	if [[ -n "${METACONTROLLER_BIN:-}" ]]; then
		check_metacontroller_bin "${METACONTROLLER_BIN}" "METACONTROLLER_BIN=${METACONTROLLER_BIN}"
		export METACONTROLLER_BIN
		return 0
	fi
	local bin="${METACONTROLLER_CACHE}/bin/metacontroller" lock_fd rc=0
	if [[ ! -x "${bin}" ]]; then
		mkdir -p "${METACONTROLLER_CACHE}"
		exec {lock_fd}>"${METACONTROLLER_CACHE}/build.lock"
		flock "${lock_fd}"
		if [[ ! -x "${bin}" ]]; then
			metacontroller_source && build_metacontroller "${METACONTROLLER_SOURCE}" "${METACONTROLLER_SOURCE_WHAT}" || rc=$?
		fi
		exec {lock_fd}>&-
		((rc == 0)) || return "${rc}"
	fi
	check_metacontroller_bin "${bin}" "${bin}"
	METACONTROLLER_BIN="${bin}"
	export METACONTROLLER_BIN
}

# require_metacontroller WHAT is ensure_metacontroller for a tool run by
# hand (hack/up.sh, hack/bench.sh): `metacontroller` on PATH counts too when
# METACONTROLLER_BIN is unset, and no engine dies in one line saying that
# WHAT needs one and how to provide it.
require_metacontroller() {
	if [[ -z "${METACONTROLLER_BIN:-}" ]] && command -v metacontroller >/dev/null; then
		METACONTROLLER_BIN="$(command -v metacontroller)"
	fi
	ensure_metacontroller ||
		die "$1 needs the engine (${METACONTROLLER_MISSING}): set METACONTROLLER_BIN=/path/to/metacontroller (${METACONTROLLER_VERSION}) or METACONTROLLER_SRC=/path/to/a/checkout/of/its/tag"
}

# ENGINE_PATCHES: the changes to Metacontroller proposed upstream (#44),
# one git patch per change, its message the pull request's description.
ENGINE_PATCHES="${ENGINE_PATCHES:-${TEAMSPACE_ROOT}/hack/bench/engine-patches}"

# ensure_proposed_engine sets and exports PROPOSED_METACONTROLLER_BIN: the
# pinned source (metacontroller_source) with every ENGINE_PATCHES/*.patch
# (or those numbered in ENGINE_PATCHES_ONLY, e.g. 0001,0003) applied in
# order, built once per set of changes into
# TEAMSPACE_CACHE/metacontroller-<version>-proposed-<hash of the diffs>
# and stamped <version>+proposed.<hash>. Only hack/bench.sh runs it: the
# suite and every install path refuse such a build (check_metacontroller_bin).
# A patch that does not apply dies naming it, before anything is built.
ensure_proposed_engine() {
	local patches=() p key dir tmp lock_fd err n
	for p in "${ENGINE_PATCHES}"/*.patch; do
		[[ -f "${p}" ]] || continue
		# ENGINE_PATCHES_ONLY=0001,0003: those patches alone (one change measured)
		if [[ -n "${ENGINE_PATCHES_ONLY:-}" ]]; then
			n=${p##*/}
			[[ ",${ENGINE_PATCHES_ONLY}," == *",${n%%-*},"* ]] || continue
		fi
		patches+=("${p}")
	done
	((${#patches[@]})) || die "no engine patches in ${ENGINE_PATCHES} (want *.patch${ENGINE_PATCHES_ONLY:+, numbered ${ENGINE_PATCHES_ONLY}})"
	# the changes only: a patch's description can be edited without a rebuild
	key=$(for p in "${patches[@]}"; do sed -n '/^diff --git /,$p' "${p}"; done | sha256sum | cut -c1-12)
	dir="${TEAMSPACE_CACHE}/metacontroller-${METACONTROLLER_VERSION}-proposed-${key}"
	PROPOSED_METACONTROLLER_BIN="${dir}/bin/metacontroller"
	export PROPOSED_METACONTROLLER_BIN
	[[ -x "${PROPOSED_METACONTROLLER_BIN}" ]] && return 0
	mkdir -p "${dir}"
	exec {lock_fd}>"${dir}/build.lock"
	flock "${lock_fd}"
	if [[ ! -x "${PROPOSED_METACONTROLLER_BIN}" ]]; then
		metacontroller_source || die "the proposed engine needs Metacontroller's source: ${METACONTROLLER_MISSING}"
		rm -rf "${dir}"/src.tmp.* # what a failed build left
		tmp="$(mktemp -d "${dir}/src.tmp.XXXXXX")"
		cp -a "${METACONTROLLER_SOURCE}/." "${tmp}/"
		for p in "${patches[@]}"; do
			# checked whole first, so that nothing is half applied
			if ! err=$(cd "${tmp}" && git apply --check "${p}" 2>&1 && git apply "${p}" 2>&1); then
				rm -rf "${tmp}"
				exec {lock_fd}>&-
				die "engine patch ${p##*/} does not apply to Metacontroller ${METACONTROLLER_VERSION} (${METACONTROLLER_SOURCE_WHAT}): $(head -n 1 <<<"${err}")"
			fi
		done
		build_metacontroller "${tmp}" "${METACONTROLLER_SOURCE_WHAT} with ${ENGINE_PATCHES}" "${dir}" "${METACONTROLLER_VERSION}+proposed.${key}"
		rm -rf "${tmp}"
	fi
	exec {lock_fd}>&-
}

# clone_metacontroller makes METACONTROLLER_CACHE/src a shallow clone of
# the tag (kept for the next build), or returns 1 with the reason in
# METACONTROLLER_MISSING.
# shellcheck disable=SC2034 # METACONTROLLER_MISSING is read by the callers
clone_metacontroller() {
	local dst="${METACONTROLLER_CACHE}/src" tmp out
	local none="no METACONTROLLER_BIN, no METACONTROLLER_SRC, no ${TEAMSPACE_ROOT%/*}/shared/metacontroller/${METACONTROLLER_VERSION}"
	[[ -f "${dst}/go.mod" ]] && return 0
	command -v git >/dev/null || {
		METACONTROLLER_MISSING="${none}, and no git to clone ${METACONTROLLER_REPO}"
		return 1
	}
	say "cloning ${METACONTROLLER_REPO} at ${METACONTROLLER_VERSION} into ${dst}"
	tmp="$(mktemp -d "${METACONTROLLER_CACHE}/src.tmp.XXXXXX")"
	if ! out=$(GIT_TERMINAL_PROMPT=0 timeout 300 git clone --quiet --depth 1 \
		--branch "${METACONTROLLER_VERSION}" "${METACONTROLLER_REPO}" "${tmp}" 2>&1); then
		rm -rf "${tmp}"
		METACONTROLLER_MISSING="${none}, and cloning ${METACONTROLLER_REPO} at ${METACONTROLLER_VERSION} failed ($(tail -n 1 <<<"${out}"))"
		return 1
	fi
	rm -rf "${dst}"
	mv "${tmp}" "${dst}"
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
		say "stopping ${what} (pid ${pid})"
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < timeout * 10; i++)); do
			pid_owned "${pidfile}" "${marker}" >/dev/null || break
			sleep 0.1
		done
		if pid_owned "${pidfile}" "${marker}" >/dev/null; then
			say "${what} (pid ${pid}) did not stop in ${timeout}s; killing it"
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

# ensure_limits_config KUBECTL...: creates ConfigMap
# teamspace-system/teamspace-limits from hack/deploy/limits-config.yaml when
# it is missing and keeps one that exists: it holds the platform team's
# limits, and an upgrade must not reset them. Its namespace must exist. It
# says in one line (with the caller's say) which it did. Used by
# hack/deploy/install.sh and hack/up.sh.
ensure_limits_config() {
	local ns=teamspace-system cm=teamspace-limits kept
	# shellcheck disable=SC2016 # a go-template, not shell
	if kept=$("$@" -n "$ns" get configmap "$cm" -o go-template='{{range $k, $v := .data}}{{$k}}="{{$v}}" {{end}}' 2>/dev/null); then
		say "platform limits: ConfigMap $ns/$cm exists, kept as it is: $kept"
	else
		"$@" create -f "${TEAMSPACE_ROOT}/hack/deploy/limits-config.yaml" >&2
		say "platform limits: created ConfigMap $ns/$cm with the shipped defaults (change them: kubectl -n $ns edit configmap $cm)"
	fi
}

# platform_manifests KUBECTL...: prints the platform, hack/deploy's
# kustomization (the roles, the guard rails, every admission policy: listed
# there once), rendered by KUBECTL kustomize, as this API server can take
# it: where it serves no MutatingAdmissionPolicy v1 (Kubernetes < 1.36)
# without requested-by.yaml's policies (new TeamSpaces are then not stamped
# with who asked), saying so in one line. hack/deploy/install.sh and
# hack/up.sh apply exactly this, hack/deploy/uninstall.sh deletes it.
platform_manifests() {
	if "$@" get --raw /apis/admissionregistration.k8s.io/v1 2>/dev/null | grep -q '"name":"mutatingadmissionpolicies"'; then
		"$@" kustomize "${TEAMSPACE_ROOT}/hack/deploy"
	else
		say "requested-by: this API server has no MutatingAdmissionPolicy v1 (Kubernetes < 1.36): new TeamSpaces are not stamped with who asked (the limits still refuse a forged one), a TeamSpace's node selector is not filled into its pods (pods that leave it out are refused), and claims that name no class get the cluster's default, not defaultStorageClass"
		"$@" kustomize "${TEAMSPACE_ROOT}/hack/deploy" | without_kinds 'MutatingAdmissionPolicy|MutatingAdmissionPolicyBinding'
	fi
}

# without_kinds REGEX copies a YAML stream as kustomize writes it (documents
# separated by "---", "kind:" at the start of a line), leaving out the
# documents whose kind matches REGEX entirely.
without_kinds() {
	awk -v re="^kind: (${1})\$" '
		function flush() {
			if (doc != "" && !drop) printf "%s---\n", doc
			doc = ""
			drop = 0
		}
		/^---$/ { flush(); next }
		{ doc = doc $0 "\n"; if ($0 ~ re) drop = 1 }
		END { flush() }'
}

# wait_teamspaces_admitted KUBECTL...: waits (60 s at most) until the API
# server admits a TeamSpace as it will admit the users' own, asked by a
# server-side dry run. Two things lag behind the objects install.sh and up.sh
# apply: a policy takes effect once the API server's informers have it, and
# a MutatingAdmissionPolicy on a new CRD knows its schema once the API
# server has read it back from its own OpenAPI (every 5 s). Until then a
# create is either not stamped with who asked or refused with 503 "Resource
# kind ... not found", which a first TeamSpace right after up.sh met in CI.
# So the probe must come back stamped (where requested-by.yaml is applied).
# A refusal of another kind is an answer of the admission chain (the probe's
# name taken, say): it ends the wait too. Used by hack/deploy/install.sh and
# hack/up.sh.
wait_teamspaces_admitted() {
	local out first="" i probe stamped=""
	probe=$'apiVersion: platform.labhub.io/v1alpha1\nkind: TeamSpace\nmetadata:\n  name: teamspace-admission-probe\nspec:\n  pods: 1\n'
	if "$@" get mutatingadmissionpolicies.admissionregistration.k8s.io teamspace-requested-by >/dev/null 2>&1; then
		stamped=yes
	fi
	for ((i = 0; i < 60; i++)); do
		if out=$(printf '%s' "$probe" | "$@" create --dry-run=server -o 'jsonpath={.metadata.annotations.platform\.labhub\.io/requested-by}' -f - 2>&1); then
			if [[ -z $stamped || -n $out ]]; then
				((i == 0)) || say "TeamSpaces are admitted after ${i} s (before: ${first//$'\n'/ })"
				return 0
			fi
			out="admitted but not stamped with who asked: the MutatingAdmissionPolicy teamspace-requested-by is not in effect yet"
		else
			case $out in
			*"There can be a delay"* | *ServiceUnavailable* | *"no matches for kind"* | *"could not find the requested resource"*) ;;
			*)
				say "TeamSpaces are admitted (a dry-run probe was refused on its own terms: ${out//$'\n'/ })"
				return 0
				;;
			esac
		fi
		[[ -n $first ]] || first=$out
		sleep 1
	done
	say "the API server does not admit TeamSpaces yet after 60 s: ${out//$'\n'/ }"
	return 1
}

# unowned_team_namespaces KUBECTL...: prints, one a line, the namespaces
# named team-* that no TeamSpace owns (no ownerReference of kind TeamSpace):
# made by hand, or left from an old install. The TeamSpace of that name, if
# any, says NamespaceConflict; hack/deploy/namespaces.yaml keeps new ones from
# appearing. Used by hack/deploy/install.sh and hack/deploy/status.sh.
unowned_team_namespaces() {
	# shellcheck disable=SC2016 # a go-template, not shell
	"$@" get namespaces -o go-template='{{range .items}}{{$n := .metadata.name}}{{if and (gt (len $n) 5) (eq (slice $n 0 5) "team-")}}{{$owned := false}}{{range .metadata.ownerReferences}}{{if eq .kind "TeamSpace"}}{{$owned = true}}{{end}}{{end}}{{if not $owned}}{{$n}}{{"\n"}}{{end}}{{end}}{{end}}'
}
