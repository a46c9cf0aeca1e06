#!/usr/bin/env bash
# The project's one command for the whole test suite, on a fresh machine
# that has only Go and git (CI's .ci/run calls it):
#
#   hack/test.sh
#   hack/test.sh --help
#
# It provides the engine, checks what needs no build (gofmt,
# staticcheck, shellcheck: seconds, so that a slip fails before the rest
# is built), vets the code, builds what is missing into the cache every later run
# reuses (Metacontroller, the engine, ~4 minutes on 2 cores; Kubernetes ~10;
# kine ~5) and runs every Go test of the root module, the engine tests on
# the real engine; the cluster test packages start private control planes
# of their own (tests/controlplane), so it never touches a cluster you
# started.
#
#   KUBE_VERSION=v1.35.4 hack/test.sh       another Kubernetes release
#   TEAMSPACE_DATASTORE=etcd hack/test.sh   Debian's etcd instead of kine
#   METACONTROLLER_BIN=/path hack/test.sh   an engine of your own (of the
#                                           version hack/deploy/lib.sh pins)
#   METACONTROLLER_SRC=/path hack/test.sh   build it from that checkout
#
# Without either, the engine is built from ../shared/metacontroller/<version>
# beside the checkout, else from a shallow clone of its tag. With none to
# be had the run fails under CI=true; elsewhere it goes on and says, at its
# start and its end, which tests did not run.
#
# Every go test runs with -shuffle=on: no test may depend on the order
# the tests of its package run in. The seed is printed ("-test.shuffle N");
# go test -shuffle=N repeats an order.
#
# To add a step: write a small function and call it from main.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${TEAMSPACE_ROOT}"

step() {
	say "$(date +%H:%M:%S) ==> $*"
}

# verify runs the checks that need nothing built but the tools: gofmt and
# staticcheck (STATICCHECK_VERSION, built once into the cache) over both Go
# modules, crd.yaml against what controller-gen makes of hook/api now, and
# every script through shellcheck (all severities, following sourced
# files). Files are what git tracks or would track: nothing ignored, no
# cache.
verify() {
	local files=() bad f
	step "verify: gofmt"
	mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.go')
	bad="$(gofmt -l "${files[@]}")"
	[[ -z ${bad} ]] || die "gofmt: not formatted (gofmt -w them): $(one_line <<<"${bad}")"
	step "verify: staticcheck ${STATICCHECK_VERSION}"
	ensure_staticcheck
	"${STATICCHECK_BIN}" ./...
	(cd hack && "${STATICCHECK_BIN}" ./...)
	step "verify: crd.yaml generated from hook/api (controller-gen ${CONTROLLER_GEN_VERSION})"
	hack/generate.sh --check
	step "verify: shellcheck"
	files=()
	while IFS= read -r f; do
		[[ -f ${f} ]] && files+=("${f}") # deleted from the work tree: gone
	done < <(git ls-files --cached --others --exclude-standard -- '*.sh')
	files+=(.ci/run)
	# From the top directory, so that `# shellcheck source=hack/...` resolves.
	shellcheck --external-sources --format=gcc "${files[@]}"
}

go_vet() {
	step "go vet"
	go vet ./...
	step "go vet (hack module: control-plane build, benchmark programs)"
	(cd hack && go vet ./...)
	step "go test (hack module: the benchmark programs' shared code)"
	(cd hack && go test -shuffle=on ./bench/...)
}

# engine provides the real Metacontroller to every engine test
# (ensure_metacontroller), before any test starts: bad input (a binary that
# is not executable or of another version, a tree that does not build) ends
# the run here in one line. From here on a test that needs the engine fails
# instead of skipping (TEAMSPACE_REQUIRE_ENGINE=1).
engine() {
	step "engine: Metacontroller ${METACONTROLLER_VERSION}"
	if ensure_metacontroller; then
		# the version it logs: the stock engine, never a proposed build (#44)
		say "engine: ${METACONTROLLER_BIN}, Metacontroller $(metacontroller_bin_version "${METACONTROLLER_BIN}")"
		export TEAMSPACE_REQUIRE_ENGINE=1
		return 0
	fi
	if [[ ${CI:-} == true || ${CI:-} == 1 ]]; then
		die "no engine (${METACONTROLLER_MISSING}); CI runs every engine test, so provide one of: METACONTROLLER_BIN=/path/to/metacontroller (${METACONTROLLER_VERSION}), METACONTROLLER_SRC=/path/to/a/checkout/of/${METACONTROLLER_VERSION} (or its source at ../shared/metacontroller/${METACONTROLLER_VERSION}), or network to clone ${METACONTROLLER_REPO}"
	fi
	no_engine_warning
}

# no_engine_warning says loudly which tests do not run for want of the
# engine: the texts the tests give testenv.NeedEngine (skipped) and
# testenv.Engine (run without it, in part).
no_engine_warning() {
	warn "NO ENGINE: ${METACONTROLLER_MISSING}"
	warn "these tests DO NOT RUN or run in part (a stub engine in its place); set METACONTROLLER_BIN or METACONTROLLER_SRC (hack/test.sh's header says how):"
	grep -rhoE 'testenv\.(NeedEngine|Engine)\(t, "[^"]*"' tests --include='*_test.go' |
		sed -E 's/^testenv\.NeedEngine\(t, "(.*)"$/  skipped: \1/; s/^testenv\.Engine\(t, "(.*)"$/  in part: \1/' | sort -u >&2
}

# tools installs what the checks call: shellcheck for every script (verify),
# systemd-analyze for the unit files.
tools() {
	local pkgs=()
	command -v shellcheck >/dev/null || pkgs+=(shellcheck)
	command -v systemd-analyze >/dev/null || pkgs+=(systemd)
	if ((${#pkgs[@]} > 0)); then
		step "install ${pkgs[*]}"
		apt_install "${pkgs[@]}"
	fi
}

# hook_tests runs the hook's own tests with the race detector (the load
# test sends 20,000 requests over 64 connections), then a short fuzz run.
# Its length is a count of inputs, not a duration: with a duration, Go 1.26's
# fuzz coordinator can fail the run with "context deadline exceeded" as
# the time runs out, having found nothing (golang/go#75804, fixed in Go
# 1.27; it failed a CI run here).
hook_tests() {
	step "go test -race ./hook/..."
	go test -race -count=1 -shuffle=on ./hook/...
	step "fuzz the hooks: ${FUZZTIME:-20000x} inputs"
	go test -run '^$' -fuzz FuzzHooks -fuzztime "${FUZZTIME:-20000x}" ./hook/server
	step "go test ./cmd/... (kubectl teamspace without a cluster; tests/cluster runs it on one)"
	go test -count=1 -shuffle=on ./cmd/...
}

# control_plane_binaries builds (once, into the cache) what the test
# control plane runs: kube-apiserver, kube-controller-manager and kubectl of
# KUBE_VERSION, and the datastore (kine unless TEAMSPACE_DATASTORE=etcd).
# From here on a missing binary fails the cluster tests instead of skipping
# them (TEAMSPACE_REQUIRE_CLUSTER=1).
control_plane_binaries() {
	step "control-plane binaries: Kubernetes ${KUBE_VERSION}, ${TEAMSPACE_DATASTORE}"
	ensure_kube_binaries
	ensure_datastore
	export KUBE_VERSION TEAMSPACE_DATASTORE KINE_VERSION TEAMSPACE_CACHE
	export TEAMSPACE_REQUIRE_CLUSTER=1
}

# cluster_tests runs every package under tests/; each package that needs a
# cluster starts its own private control plane from TestMain
# (tests/controlplane), keeps its logs if a test fails, and stops it. One
# package at a time: two cores; inside tests/cluster the tests that wait on
# the API server run side by side (CONTRIBUTING: parallel and alone).
# tests/node boots hack/node.sh's systemd-nspawn machine
# (TEAMSPACE_NODE_TEST=1; it brings its own control plane inside the node).
cluster_tests() {
	step "go test ./tests/... (Kubernetes ${KUBE_VERSION} on ${TEAMSPACE_DATASTORE})"
	ensure_node_tools
	TEAMSPACE_NODE_TEST="${TEAMSPACE_NODE_TEST:-1}" go test -count=1 -p 1 -shuffle=on -timeout 45m ./tests/...
}

# ensure_node_tools installs what hack/node.sh needs (systemd-nspawn,
# debootstrap) and builds its root tarball once (cached).
ensure_node_tools() {
	local pkgs=()
	command -v systemd-nspawn >/dev/null || pkgs+=(systemd-container)
	command -v debootstrap >/dev/null || pkgs+=(debootstrap)
	if ((${#pkgs[@]} > 0)); then
		step "install ${pkgs[*]}"
		apt_install "${pkgs[@]}"
	fi
	step "node root (hack/node.sh tree; cached)"
	as_root hack/node.sh tree
}

# s3_server builds (once, into the cache) the S3 server the archive's tests
# run on loopback; from here on they fail instead of skipping without it.
s3_server() {
	step "S3 server for the archive tests: versitygw ${VERSITYGW_VERSION}"
	ensure_versitygw
	export VERSITYGW_VERSION TEAMSPACE_CACHE
	export TEAMSPACE_REQUIRE_S3=1
}

# monitoring_tools builds (once, into the cache) promtool and
# kube-state-metrics: from here on the tests of the alert rules and of the
# kube-state-metrics configuration (hack/deploy/prometheus) fail instead of
# skipping without them.
monitoring_tools() {
	step "promtool ${PROMETHEUS_VERSION}, kube-state-metrics ${KUBE_STATE_METRICS_VERSION}"
	ensure_promtool
	ensure_kube_state_metrics
	export PROMTOOL_BIN KUBE_STATE_METRICS_BIN
	export TEAMSPACE_REQUIRE_MONITORING=1
}

main() {
	no_args "$@"
	local start="${SECONDS}"
	# The engine first: bad engine input (or none under CI) ends the run in
	# its first step, in one line. Then what needs no build.
	engine
	tools
	verify
	go_vet
	s3_server
	monitoring_tools
	hook_tests
	control_plane_binaries
	cluster_tests
	if [[ -z ${TEAMSPACE_REQUIRE_ENGINE:-} ]]; then
		no_engine_warning
		step "all tests that ran passed in $((SECONDS - start))s, WITHOUT THE ENGINE (see above)"
		return 0
	fi
	step "all tests passed in $((SECONDS - start))s"
}

# Sourced (tests/engine reads no_engine_warning's list), it defines only.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
	main "$@"
fi
