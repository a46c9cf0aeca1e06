#!/usr/bin/env bash
# hack/plugin.sh: `kubectl teamspace` as krew installs it: one archive per
# platform (the kubectl-teamspace binary, built with -trimpath, no cgo,
# stripped) and the krew manifest naming each archive's URL and sha256.
#
#   hack/plugin.sh VERSION BASE_URL [OUT_DIR]
#
#   VERSION   the release, vMAJOR.MINOR.PATCH (krew's form)
#   BASE_URL  where the archives will be served from (a release's
#             download URL); each is BASE_URL/kubectl-teamspace_<os>_<arch>.tar.gz
#   OUT_DIR   where to write them and teamspace.yaml [dist/plugin]
#
# Then: upload the archives to BASE_URL, and
#   kubectl krew install --manifest=dist/plugin/teamspace.yaml
# (or offer the manifest to a krew index). Without krew:
#   go install github.com/labhub/teamspace/cmd/kubectl-teamspace@VERSION
#
# Environment: PLUGIN_PLATFORMS, space-separated os/arch
# [linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64].
set -euo pipefail
prog=plugin.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case ${1:-} in
-h | --help) usage; exit 0 ;;
esac
(($# >= 2 && $# <= 3)) || die "want VERSION BASE_URL [OUT_DIR] (see --help)"
version=$1 base_url=${2%/} out=${3:-${TEAMSPACE_ROOT}/dist/plugin}
[[ ${version} =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "VERSION '${version}' is not vMAJOR.MINOR.PATCH (krew wants that form)"
[[ ${base_url} =~ ^https?:// ]] || die "BASE_URL '${base_url}' is not an http(s) URL"
platforms=${PLUGIN_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64}

mkdir -p "${out}"
tmp=$(mktemp -d)
trap 'rm -rf "${tmp}"' EXIT
manifest="${tmp}/teamspace.yaml"
cat >"${manifest}" <<EOF
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: teamspace
spec:
  version: ${version}
  homepage: https://github.com/labhub/teamspace
  shortDescription: TeamSpaces as their owners and requesters see them
  description: |
    kubectl teamspace mine: the TeamSpaces I own or requested, without the
    right to list them. show NAME: one TeamSpace at a glance (owners, Ready
    in plain words, each namespace's quota). allowance: what I may still
    request, and the platform's limits.
  platforms:
EOF
for platform in ${platforms}; do
	os=${platform%/*} arch=${platform#*/}
	[[ ${platform} == */* && -n ${os} && -n ${arch} ]] || die "PLUGIN_PLATFORMS: '${platform}' is not os/arch"
	bin=kubectl-teamspace
	[[ ${os} == windows ]] && bin=kubectl-teamspace.exe
	dir="${tmp}/${os}_${arch}"
	mkdir -p "${dir}"
	say "building ${bin} for ${os}/${arch}"
	(cd "${TEAMSPACE_ROOT}" && CGO_ENABLED=0 GOOS=${os} GOARCH=${arch} go build -trimpath -ldflags='-s -w' -o "${dir}/${bin}" ./cmd/kubectl-teamspace)
	archive="kubectl-teamspace_${os}_${arch}.tar.gz"
	tar -C "${dir}" -czf "${out}/${archive}" "${bin}"
	sum=$(sha256sum "${out}/${archive}" | cut -d' ' -f1)
	cat >>"${manifest}" <<EOF
    - selector:
        matchLabels:
          os: ${os}
          arch: ${arch}
      uri: ${base_url}/${archive}
      sha256: ${sum}
      bin: ${bin}
EOF
done
cp "${manifest}" "${out}/teamspace.yaml"
say "wrote ${out}/teamspace.yaml and $(wc -w <<<"${platforms}") archives"
