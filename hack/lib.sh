# shellcheck shell=bash
# Shared helpers for the scripts under hack/. Source it; it defines
# functions and variables and runs nothing.

# The Kubernetes release the test cluster runs. hack/go.mod pins the same
# version (k8s.io/kubernetes plus every staging module it replaces).
KUBE_VERSION="${KUBE_VERSION:-v1.37.2}"

TEAMSPACE_HACK_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck disable=SC2034 # for the scripts that source this file
TEAMSPACE_ROOT="$(cd "${TEAMSPACE_HACK_DIR}/.." && pwd)"

# What the shipped installer needs (messages, the engine's pinned release,
# background processes, the platform's manifests) is hack/deploy/lib.sh's,
# which stands on its own; the developers' scripts build on it.
# shellcheck source=hack/deploy/lib.sh
source "${TEAMSPACE_HACK_DIR}/deploy/lib.sh"

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

# METACONTROLLER_VERSION, the one pin of the engine's release, is in
# hack/deploy/lib.sh (sourced above): the installer checks it too.
METACONTROLLER_REPO="${METACONTROLLER_REPO:-https://github.com/metacontroller/metacontroller}"
METACONTROLLER_CACHE="${TEAMSPACE_CACHE}/metacontroller-${METACONTROLLER_VERSION}"

# engine_tuning_flags prints the engine's tuning flags. They live in the
# systemd unit only (METACONTROLLER_TUNING, with the reasons); hack/up.sh
# and hack/bench.sh read them from there.
engine_tuning_flags() {
	local unit="${TEAMSPACE_ROOT}/hack/deploy/systemd/metacontroller.service" flags
	flags=$(sed -n 's/^Environment="METACONTROLLER_TUNING=\(.*\)"$/\1/p' "${unit}")
	[[ -n "${flags}" ]] || die "no METACONTROLLER_TUNING in ${unit}"
	printf '%s\n' "${flags}"
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
		die "${what} is Metacontroller ${v}, not ${METACONTROLLER_VERSION} (the version hack/deploy/lib.sh pins)"
	fi
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
	[[ "${v}" == "${METACONTROLLER_VERSION}" ]] || die "${what} is Metacontroller ${v}, not ${METACONTROLLER_VERSION} (the version hack/deploy/lib.sh pins)"
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

# patches_key PATCH...: the key of a build of those patches, from their
# changes only, so that a patch's description can be edited without a
# rebuild (ensure_proposed_engine, ensure_proposed_kube).
patches_key() {
	local p
	for p in "$@"; do sed -n '/^diff --git /,$p' "${p}"; done | sha256sum | cut -c1-12
}

# apply_patches DIR PATCH...: applies each patch, in order, to the tree
# DIR, each checked whole first so that nothing is half applied. On the
# first that does not apply it prints "<file name>: <git's first line>"
# and returns 1 (the caller cleans up and dies naming it).
apply_patches() {
	local dir=$1 p err
	shift
	for p in "$@"; do
		if ! err=$(cd "${dir}" && git apply --check "${p}" 2>&1 && git apply "${p}" 2>&1); then
			printf '%s: %s\n' "${p##*/}" "$(head -n 1 <<<"${err}")"
			return 1
		fi
	done
}

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
	key=$(patches_key "${patches[@]}")
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
		if ! err=$(apply_patches "${tmp}" "${patches[@]}"); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "engine patch ${err%%: *} does not apply to Metacontroller ${METACONTROLLER_VERSION} (${METACONTROLLER_SOURCE_WHAT}): ${err#*: }"
		fi
		build_metacontroller "${tmp}" "${METACONTROLLER_SOURCE_WHAT} with ${ENGINE_PATCHES}" "${dir}" "${METACONTROLLER_VERSION}+proposed.${key}"
		rm -rf "${tmp}"
	fi
	exec {lock_fd}>&-
}

# KUBE_PATCHES: the changes to Kubernetes proposed upstream (the garbage
# collector's, found by the fault run of #67), one git patch per change,
# its message the pull request's description, as ENGINE_PATCHES.
KUBE_PATCHES="${KUBE_PATCHES:-${TEAMSPACE_ROOT}/hack/bench/kubernetes-patches}"

# ensure_proposed_kube sets and exports TEAMSPACE_KUBE_BIN_DIR: KUBE_BIN_DIR's
# kube-apiserver and kubectl beside a kube-controller-manager built from
# k8s.io/kubernetes KUBE_VERSION (hack/go.mod's) with every
# KUBE_PATCHES/*.patch applied in order, once per set of changes, into
# TEAMSPACE_CACHE/k8s-<version>-proposed-<hash of the diffs>/bin. The
# control plane of tests/controlplane runs TEAMSPACE_KUBE_BIN_DIR's binaries
# when it is set; only hack/bench.sh sets it. A patch that does not apply
# dies naming it, before anything is built.
ensure_proposed_kube() {
	local patches=() p key dir tmp src lock_fd err
	for p in "${KUBE_PATCHES}"/*.patch; do
		[[ -f "${p}" ]] && patches+=("${p}")
	done
	((${#patches[@]})) || die "no Kubernetes patches in ${KUBE_PATCHES}"
	[[ "${KUBE_VERSION}" == "$(hack_kube_version)" ]] ||
		die "the proposed Kubernetes is built from hack/go.mod's k8s.io/kubernetes $(hack_kube_version), not KUBE_VERSION ${KUBE_VERSION}"
	ensure_kube_binaries
	key=$(patches_key "${patches[@]}")
	dir="${TEAMSPACE_CACHE}/k8s-${KUBE_VERSION}-proposed-${key}"
	TEAMSPACE_KUBE_BIN_DIR="${dir}/bin"
	export TEAMSPACE_KUBE_BIN_DIR
	[[ -x "${dir}/bin/kube-controller-manager" ]] && return 0
	mkdir -p "${dir}"
	exec {lock_fd}>"${dir}/build.lock"
	flock "${lock_fd}"
	if [[ ! -x "${dir}/bin/kube-controller-manager" ]]; then
		rm -rf "${dir}"/build.tmp.* # what a failed build left
		tmp="$(mktemp -d "${dir}/build.tmp.XXXXXX")"
		src="$(cd "${TEAMSPACE_HACK_DIR}" && GOWORK=off go list -m -f '{{.Dir}}' k8s.io/kubernetes)" ||
			die "k8s.io/kubernetes ${KUBE_VERSION}: not in the module cache (go mod download in hack/)"
		mkdir -p "${tmp}/src" "${tmp}/module" "${tmp}/bin"
		cp -a "${src}/." "${tmp}/src/"
		chmod -R u+w "${tmp}/src"
		if ! err=$(apply_patches "${tmp}/src" "${patches[@]}"); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "Kubernetes patch ${err%%: *} does not apply to ${KUBE_VERSION}: ${err#*: }"
		fi
		say "building kube-controller-manager ${KUBE_VERSION} with ${KUBE_PATCHES} into ${dir}/bin"
		cp "${TEAMSPACE_HACK_DIR}/go.mod" "${TEAMSPACE_HACK_DIR}/go.sum" "${tmp}/module/"
		if ! (cd "${tmp}/module" &&
			go mod edit -replace "k8s.io/kubernetes=${tmp}/src" -replace "github.com/labhub/teamspace=${TEAMSPACE_ROOT}" &&
			GOWORK=off CGO_ENABLED="${CGO_ENABLED:-0}" go build -trimpath \
				-ldflags="$(kube_ldflags)" -o "${tmp}/bin/" k8s.io/kubernetes/cmd/kube-controller-manager); then
			rm -rf "${tmp}"
			exec {lock_fd}>&-
			die "building the proposed kube-controller-manager failed"
		fi
		ln -s "${KUBE_BIN_DIR}/kube-apiserver" "${KUBE_BIN_DIR}/kubectl" "${tmp}/bin/"
		rm -rf "${dir:?}/bin"
		mv "${tmp}/bin" "${dir}/bin"
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
