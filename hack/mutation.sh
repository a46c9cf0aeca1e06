#!/usr/bin/env bash
# Mutation testing of the hook: gremlins (github.com/go-gremlins/gremlins)
# changes one operator or condition at a time in a package under hook/ and
# runs the fast suite against each change; a mutant that no test notices
# "lived". CONTRIBUTING.md ("Mutation testing") has the last report.
#
#   hack/mutation.sh                      # hook/teamspace, hook/archive, hook/server
#   hack/mutation.sh hook/teamspace       # one package
#
# One package at a time, one worker, under nice: a run is CPU-heavy (one
# build and test run per mutant). Results: mutation-out/<package>.json.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
for arg in "$@"; do
	case "${arg}" in
	-h | --help) usage; exit 0 ;;
	-*) die "unknown option '${arg}' (see --help)" ;;
	esac
done
cd "${TEAMSPACE_ROOT}"

# GREMLINS_VERSION is pinned: mutant sets and counts change between versions.
GREMLINS_VERSION=v0.6.0
# FAST_SUITE is what every mutant is tested with: the hook's own tests and
# the golden suite (-short: fewer rounds of the kill and load loops). The
# cluster, deployment and walkthrough tests skip without a cluster anyway.
FAST_SUITE="-short ./hook/... ./tests"

tools="${TEAMSPACE_CACHE:-${HOME}/.cache/teamspace}/tools/gremlins-${GREMLINS_VERSION}"
if [[ ! -x "${tools}/gremlins" ]]; then
	say "installing gremlins ${GREMLINS_VERSION}"
	GOBIN="${tools}" go install "github.com/go-gremlins/gremlins/cmd/gremlins@${GREMLINS_VERSION}"
fi

# gremlins' --integration mode runs `go test ./...` of the whole module for
# each mutant; this go on PATH narrows that one pattern to FAST_SUITE and
# passes everything else through.
shim="$(mktemp -d)"
trap 'rm -rf "${shim}"' EXIT
real_go="$(command -v go)"
cat >"${shim}/go" <<SHIM
#!/usr/bin/env bash
if [[ "\$1" == test && "\${!#}" == ./... ]]; then
	set -- "\${@:1:\$#-1}" ${FAST_SUITE}
fi
exec "${real_go}" "\$@"
SHIM
chmod +x "${shim}/go"

mkdir -p mutation-out
pkgs=("$@")
((${#pkgs[@]} > 0)) || pkgs=(hook/teamspace hook/archive hook/server)
for pkg in "${pkgs[@]}"; do
	say "==> gremlins over ${pkg} (fast suite: ${FAST_SUITE})"
	PATH="${shim}:${PATH}" nice -n 19 "${tools}/gremlins" unleash \
		--integration --coverpkg "./${pkg}" --workers 1 --timeout-coefficient 5 \
		--output "mutation-out/${pkg//\//-}.json" "./${pkg}"
done
