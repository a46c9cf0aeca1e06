#!/usr/bin/env bash
# Writes what is generated from the Go sources: crd.yaml, from the API's
# types and kubebuilder markers in hook/api/v1alpha1, by controller-gen
# (CONTROLLER_GEN_VERSION in hack/lib.sh, built once into the cache).
#
#   hack/generate.sh           rewrite crd.yaml
#   hack/generate.sh --check   fail, naming the file, if it is out of date
#                              (hack/test.sh's verify step)
#   hack/generate.sh --help
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

check=false
case "${1:-}" in
--check) check=true ;;
"") ;;
*) other_arg "$1" ;;
esac
(($# <= 1)) || die "unknown argument '$2' (see --help)"

if ! ${check}; then
	generate_crd "${TEAMSPACE_ROOT}"
	say "wrote crd.yaml"
	exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
generate_crd "${tmp}"
if ! diff -u "${TEAMSPACE_ROOT}/crd.yaml" "${tmp}/crd.yaml" >"${tmp}/diff"; then
	cat "${tmp}/diff" >&2
	die "crd.yaml is out of date with hook/api/v1alpha1: run hack/generate.sh and commit it"
fi
