#!/usr/bin/env bash
# hack/deploy/hand-over-quotas.sh: after upgrading, hands the quotas made
# before to the DecoratorController of the quotas (compositecontroller.yaml),
# whose parent is each team namespace's LimitRange team-defaults (issue
# #55). The CompositeController used to have each team namespace's
# team-quota and team-objects as children (before issue #54), then a
# DecoratorController of the namespace (#54); the DecoratorController
# teamspace-quotas never adopts a quota someone else made: this gives each
# such quota the LimitRange as controller and the DecoratorController's
# mark, nothing else (its limits stay; no quota is ever missing). Until it
# runs, those TeamSpaces wait in QuotaPending ("by DecoratorController
# teamspace-quotas") with their quotas in place. install.sh runs it; for
# the in-cluster install, run it once after `kubectl apply -k`. Idempotent.
#
# Usage: hack/deploy/hand-over-quotas.sh [--kubeconfig FILE]
#   --kubeconfig FILE    kubeconfig to use (default $KUBECONFIG, else
#                        /etc/rancher/k3s/k3s.yaml): an admin's, it patches
#                        quotas in team namespaces
#   -h, --help
# Environment: KUBECONFIG, KUBECTL.
set -euo pipefail
prog=hand-over-quotas.sh
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

kubeconfig=""
while (($# > 0)); do
	case $1 in
	--kubeconfig=*) kubeconfig=${1#*=} ;;
	--kubeconfig)
		(($# > 1)) || die "--kubeconfig wants a file"
		kubeconfig=$2
		shift
		;;
	*) other_arg "$1" ;;
	esac
	shift
done
load_settings
[[ -z $kubeconfig ]] || export KUBECONFIG=$kubeconfig
default_kubeconfig
kc version >/dev/null 2>&1 || die "cannot reach the API server (KUBECONFIG=$KUBECONFIG)"
say "handed $(hand_over_quotas kc) quota(s) over to DecoratorController $TS_QUOTAS_CONTROLLER"
