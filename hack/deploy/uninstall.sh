#!/usr/bin/env bash
# hack/deploy/uninstall.sh: undo hack/deploy/install.sh.
#
# Stops and disables the services, removes the CompositeController, the
# engine's credential and RBAC, the units and the binaries. It KEEPS the
# TeamSpace CRD, every TeamSpace, their namespaces and quotas, and the archive
# (/var/lib/teamspace): without the engine nothing changes them, and
# reinstalling picks them up again. Metacontroller's CRDs are kept too (other
# controllers may use them).
#
# Usage: hack/deploy/uninstall.sh [options]
#   --delete-teamspaces  ALSO delete every TeamSpace, the TeamSpace CRD and so
#                        (through their finalizer and owner references) every
#                        team-* namespace the engine created with ALL their
#                        workloads and data. The engine and hook are kept
#                        running until the TeamSpaces are gone, so that each
#                        deletion is archived. Asks for confirmation unless
#                        --yes is given.
#   --yes                do not ask
#   --service-manager=systemd|none, --destdir=DIR, --prefix=DIR: as for install.sh
#   -h, --help
# Environment: KUBECONFIG (cluster-admin; default /etc/rancher/k3s/k3s.yaml),
# SERVICE_MANAGER, DESTDIR, PREFIX, KUBECTL.
set -euo pipefail
export LC_ALL=C
prog=uninstall.sh
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

delete_teamspaces=""
yes=""
while (($# > 0)); do
	case $1 in
	--delete-teamspaces) delete_teamspaces=1 ;;
	--yes) yes=1 ;;
	--service-manager=*) SERVICE_MANAGER=${1#*=} ;;
	--destdir=*) DESTDIR=${1#*=} ;;
	--prefix=*) PREFIX=${1#*=} ;;
	-h | --help)
		usage
		exit 0
		;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
	shift
done
# nothing_installed_exit says so and exits 0 when neither this host nor the
# cluster (when one is configured and reachable) holds anything install.sh
# makes. The archive does not count: uninstall keeps it anyway.
nothing_installed_exit() {
	local f
	for f in "$unitdir/teamspace-hook.service" "$unitdir/metacontroller.service" \
		"$bindir/teamspace-hook" "$bindir/metacontroller" "$engine_kubeconfig"; do
		[[ ! -e $f ]] || return 0
	done
	if [[ -n ${KUBECONFIG:-} || -r /etc/rancher/k3s/k3s.yaml ]]; then
		export KUBECONFIG=${KUBECONFIG:-/etc/rancher/k3s/k3s.yaml}
		if kc --request-timeout=10s version >/dev/null 2>&1; then
			[[ -z $(kc get clusterrole teamspace-metacontroller --ignore-not-found -o name 2>/dev/null) ]] || return 0
			[[ -z $(kc get crd compositecontrollers.metacontroller.k8s.io --ignore-not-found -o name 2>/dev/null) ]] ||
				[[ -z $(kc get compositecontrollers.metacontroller.k8s.io "$TS_COMPOSITECONTROLLER" --ignore-not-found -o name 2>/dev/null) ]] || return 0
			[[ -z $delete_teamspaces ]] || return 0
		fi
	fi
	say "nothing to uninstall: no TeamSpace services, units, binaries or engine credential here${KUBECONFIG:+ and no objects of install.sh in the cluster}"
	exit 0
}
load_settings
if [[ $SERVICE_MANAGER == systemd ]]; then
	[[ $(id -u) == 0 ]] || die "run as root (or SERVICE_MANAGER=none with a DESTDIR)"
fi
nothing_installed_exit
default_kubeconfig
cluster=yes
if ! kc version >/dev/null 2>&1; then
	[[ -z $delete_teamspaces ]] || die "cannot reach the cluster with KUBECONFIG=$KUBECONFIG; not deleting anything"
	warn "cannot reach the cluster with KUBECONFIG=$KUBECONFIG: removing the host side only; run again to remove the cluster objects"
	cluster=""
fi

# del: delete what exists, quietly about what does not.
del() { kc delete --ignore-not-found --wait=true "$@" >&2; }

if [[ -n $delete_teamspaces && -n $cluster ]]; then
	n=$(kc get teamspaces.platform.labhub.io -o name 2>/dev/null | wc -l || true)
	cat >&2 <<EOF

################################################################################
#  --delete-teamspaces: DELETING ALL $n TEAMSPACES, THE TEAMSPACE CRD AND EVERY
#  team-* NAMESPACE THE ENGINE CREATED, WITH EVERYTHING IN THEM (workloads,
#  volumes, secrets). THIS CANNOT BE UNDONE. Deletions are archived by the hook.
################################################################################

EOF
	if [[ -z $yes ]]; then
		[[ -t 0 ]] || die "refusing without --yes when stdin is not a terminal"
		read -r -p "Type 'delete teamspaces' to go on: " answer
		[[ $answer == "delete teamspaces" ]] || die "not confirmed; nothing deleted"
	fi
	if kc get crd "$TS_CRD" >/dev/null 2>&1; then
		say "DELETING every TeamSpace (the engine finalizes each; waiting up to 5 min)"
		kc delete teamspaces.platform.labhub.io --all --wait=true --timeout=300s >&2 ||
			die "TeamSpaces are not all gone (is the engine running? kubectl get teamspaces); nothing else removed"
	fi
	say "DELETING CRD $TS_CRD"
	del crd "$TS_CRD"
fi

# --- services ---------------------------------------------------------------
# The engine first: with the hook gone it would only retry and log errors.
if [[ $SERVICE_MANAGER == systemd ]]; then
	for u in metacontroller teamspace-hook; do
		if [[ -e $unitdir/$u.service ]]; then
			systemctl disable --now "$u.service" >&2 || warn "could not stop $u.service"
		fi
	done
else
	for u in metacontroller teamspace-hook; do
		none_stop "$u"
	done
	rm -rf "$rundir/credentials"
fi

# --- cluster objects --------------------------------------------------------
if [[ -n $cluster ]]; then
	# Deleting the CompositeController does not touch TeamSpaces or their
	# children (the engine is stopped anyway); the engine's finalizer stays on
	# each TeamSpace until it runs again: deleting a TeamSpace in the meantime
	# waits for a reinstall (or for `kubectl patch` removing the finalizer).
	say "removing CompositeController $TS_COMPOSITECONTROLLER"
	if kc get crd compositecontrollers.metacontroller.k8s.io >/dev/null 2>&1; then
		del compositecontrollers.metacontroller.k8s.io "$TS_COMPOSITECONTROLLER"
	fi
	say "removing the engine's credential and RBAC"
	del -n "$TS_NAMESPACE" secret "$TS_TOKEN_SECRET" 2>/dev/null || true
	del -f "$deploy_dir/rbac-leader-election.yaml" 2>/dev/null || true
	del clusterrolebinding teamspace-metacontroller
	del clusterrole teamspace-metacontroller
	del -n "$TS_NAMESPACE" serviceaccount "$TS_SERVICE_ACCOUNT" 2>/dev/null || true
	# The namespace goes too, unless something else lives there (e.g. the
	# in-cluster hook of hack/deploy/kustomize).
	if kc get namespace "$TS_NAMESPACE" >/dev/null 2>&1; then
		others=$(kc -n "$TS_NAMESPACE" get deployments,statefulsets,daemonsets,pods,services,persistentvolumeclaims -o name 2>/dev/null || true)
		if [[ -z $others ]]; then
			kc delete namespace "$TS_NAMESPACE" --ignore-not-found --wait=true --timeout=120s >&2 ||
				warn "namespace $TS_NAMESPACE is still terminating"
		else
			say "keeping namespace $TS_NAMESPACE: it holds $(wc -l <<<"$others") other objects"
		fi
	fi
fi

# --- host files -------------------------------------------------------------
rm -f "$engine_kubeconfig"
for u in "${TS_UNITS[@]}"; do
	rm -f "$unitdir/$u.service"
done
[[ $SERVICE_MANAGER != systemd ]] || systemctl daemon-reload
rm -f "$bindir/teamspace-hook" "$bindir/metacontroller"
rmdir "$confdir" 2>/dev/null || true
say "done. Kept: the archive in $statedir$([[ -n $delete_teamspaces ]] || printf '%s' ", the TeamSpace CRD, all TeamSpaces and their namespaces") and Metacontroller's CRDs."
