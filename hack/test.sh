#!/usr/bin/env bash
# The project's one command for the whole test suite, on a fresh machine
# that has only Go and git (CI's .ci/run calls it):
#
#   hack/test.sh
#
# It vets the code, builds the control-plane binaries that are missing
# (Kubernetes ~10 minutes on 2 cores, kine ~5, into the cache every
# later run reuses) and runs every Go test of the root module; the cluster
# test packages start private control planes of their own
# (tests/controlplane), so it never touches a cluster you started.
#
#   KUBE_VERSION=v1.35.4 hack/test.sh       another Kubernetes release
#   TEAMSPACE_DATASTORE=etcd hack/test.sh   Debian's etcd instead of kine
#
# To add a step: write a small function and call it from main.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${TEAMSPACE_ROOT}"

step() {
	say "$(date +%H:%M:%S) ==> $*"
}

go_vet() {
	step "go vet"
	go vet ./...
	step "go vet (hack module: control-plane build, benchmark programs)"
	(cd hack && go vet ./...)
	step "go test (hack module: the benchmark programs' shared code)"
	(cd hack && go test ./bench/...)
}

# tools installs what the checks call: shellcheck for every script,
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
hook_tests() {
	step "go test -race ./hook/..."
	go test -race -count=1 ./hook/...
	step "fuzz the hooks for ${FUZZTIME:-20s}"
	go test -run '^$' -fuzz FuzzHooks -fuzztime "${FUZZTIME:-20s}" ./hook/server
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
# package at a time: two cores. tests/node boots hack/node.sh's
# systemd-nspawn machine (TEAMSPACE_NODE_TEST=1; it brings its own control
# plane inside the node).
cluster_tests() {
	step "go test ./tests/... (Kubernetes ${KUBE_VERSION} on ${TEAMSPACE_DATASTORE})"
	ensure_node_tools
	TEAMSPACE_NODE_TEST="${TEAMSPACE_NODE_TEST:-1}" go test -count=1 -p 1 -timeout 45m ./tests/...
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

main() {
	local start="${SECONDS}"
	go_vet
	tools
	s3_server
	hook_tests
	control_plane_binaries
	cluster_tests
	step "all tests passed in $((SECONDS - start))s"
}

main "$@"
