#!/usr/bin/env bash
# The project's one command for the whole test suite, on a fresh machine
# that has only Go and git (CI's .ci/run calls it):
#
#   hack/test.sh
#
# It vets the code, brings up a private local cluster (hack/cluster.sh, in
# a state dir of its own, so it never touches a cluster you started), runs
# every Go test of the root module against it, and brings it down on exit.
# The first run builds the Kubernetes binaries (~10 minutes on 2 cores) into
# the cache that every later run reuses.
#
# To add a step: write a small function and call it from main.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "${TEAMSPACE_ROOT}"

step() {
	log "==> $*"
}

go_vet() {
	step "go vet"
	go vet ./...
	step "go vet (hack module: control-plane build, benchmark programs)"
	(cd hack && go vet ./...)
}

# tools installs what the checks call: shellcheck for every script,
# systemd-analyze for the unit files, jq for the walkthrough.
tools() {
	local pkgs=()
	command -v shellcheck >/dev/null || pkgs+=(shellcheck)
	command -v systemd-analyze >/dev/null || pkgs+=(systemd)
	command -v jq >/dev/null || pkgs+=(jq)
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

cluster_up() {
	step "cluster up"
	TEAMSPACE_STATE="$(mktemp -d "${TMPDIR:-/tmp}/teamspace-test.XXXXXX")"
	export TEAMSPACE_STATE
	trap cluster_down EXIT
	hack/cluster.sh up
	eval "$(hack/cluster.sh env)"
}

# cluster_down runs on exit; after a failure it shows the components' last
# log lines first, as the state dir (logs included) goes with the cluster.
cluster_down() {
	local status=$?
	if ((status != 0)) && [[ -d "${TEAMSPACE_STATE}/logs" ]]; then
		local f
		for f in "${TEAMSPACE_STATE}"/logs/*.log; do
			log "last lines of ${f}:"
			tail -n 20 "${f}" >&2 || true
		done
	fi
	step "cluster down"
	hack/cluster.sh down || true
}

# cluster_tests runs every package under tests/ against the cluster, one
# package at a time: they share it, and some install cluster-wide objects.
# tests/node boots hack/node.sh's systemd-nspawn machine (TEAMSPACE_NODE_TEST=1;
# it brings its own control plane inside the node).
cluster_tests() {
	step "go test ./tests/..."
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

main() {
	local start="${SECONDS}"
	go_vet
	tools
	hook_tests
	cluster_up
	cluster_tests
	step "all tests passed in $((SECONDS - start))s"
}

main "$@"
