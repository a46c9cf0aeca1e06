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
# It never strands a TeamSpace: while any TeamSpace is being deleted (has a
# deletionTimestamp) it refuses to remove the engine that must finish that
# deletion, and names them; with --wait it waits for them instead. Protected
# TeamSpaces (annotation platform.labhub.io/protected: "true") are never
# deleted by it. The guard rails (guardrails.yaml), the platform limits
# (limits.yaml, limits-config.yaml, requested-by.yaml), the reserved team-
# prefix (namespaces.yaml) and the people's roles (roles.yaml) stay while
# the CRD stays: TeamSpaces can still be requested then, and a re-install
# would act on them; --delete-teamspaces removes them with the CRD.
#
# Usage: hack/deploy/uninstall.sh [options]
#   --delete-teamspaces  ALSO delete every TeamSpace, the TeamSpace CRD and so
#                        (through their finalizer and owner references) every
#                        team-* namespace the engine created with ALL their
#                        workloads and data. Refused while any TeamSpace is
#                        protected (lift it first: kubectl annotate teamspace
#                        NAME platform.labhub.io/protected-). The engine and
#                        hook keep running until every TeamSpace is archived
#                        and gone; only then are the CRD (annotated
#                        platform.labhub.io/allow-delete=true, which the guard
#                        rails require), the guard rails and the engine
#                        removed. Asks for confirmation unless --yes is given.
#   --wait               wait for TeamSpaces being deleted instead of refusing
#   --timeout=SECONDS    how long --wait and --delete-teamspaces wait (default 300)
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

delete_teamspaces=""
yes=""
wait_deleting=""
timeout=300
while (($# > 0)); do
	case $1 in
	--delete-teamspaces) delete_teamspaces=1 ;;
	--yes) yes=1 ;;
	--wait) wait_deleting=1 ;;
	--timeout=*) timeout=${1#*=} ;;
	--service-manager=*) SERVICE_MANAGER=${1#*=} ;;
	--destdir=*) DESTDIR=${1#*=} ;;
	--prefix=*) PREFIX=${1#*=} ;;
	*) other_arg "$1" ;;
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
[[ $timeout =~ ^[0-9]+$ ]] || die "--timeout wants a number of seconds, not '$timeout'"
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

# teamspaces_where FILTER prints the names of the TeamSpaces for which the
# jsonpath filter holds (nothing when the CRD is not there).
teamspaces_where() {
	kc get teamspaces.platform.labhub.io -o jsonpath="{range .items[?($1)]}{.metadata.name}{'\n'}{end}" 2>/dev/null || true
}
deleting() { teamspaces_where '@.metadata.deletionTimestamp'; }
protected() { teamspaces_where '@.metadata.annotations.platform\.labhub\.io/protected=="true"'; }
all_teamspaces() { teamspaces_where '@.metadata.name'; }

# wait_gone WHAT LISTER: wait up to $timeout s until LISTER prints nothing.
wait_gone() {
	local what=$1 lister=$2 left i
	for ((i = 0; i <= timeout; i++)); do
		left=$($lister)
		[[ -z $left ]] && return 0
		((i % 15 == 0)) && say "waiting for $what: $(one_line <<<"$left")"
		sleep 1
	done
	die "$what still there after ${timeout}s: $(one_line <<<"$left"); nothing removed, the engine keeps running (kubectl get teamspaces; hack/deploy/status.sh)"
}

have_crd=""
if [[ -n $cluster ]] && kc get crd "$TS_CRD" >/dev/null 2>&1; then
	have_crd=1
fi

if [[ -n $delete_teamspaces && -n $have_crd ]]; then
	prot=$(protected)
	[[ -z $prot ]] || die "--delete-teamspaces: refusing, these TeamSpaces are protected: $(one_line <<<"$prot"). Lift the protection of each first (kubectl annotate teamspace NAME platform.labhub.io/protected-); nothing deleted"
	n=$(all_teamspaces | grep -c . || true)
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
	uids=$(kc get teamspaces.platform.labhub.io -o jsonpath="{range .items[*]}{.metadata.uid}{'\n'}{end}")
	say "DELETING every TeamSpace (the engine archives and finalizes each; waiting up to ${timeout}s)"
	kc delete teamspaces.platform.labhub.io --all --wait=false >&2 ||
		die "deleting the TeamSpaces failed (one protected meanwhile?); the engine keeps running"
	wait_gone "TeamSpaces being deleted" all_teamspaces
	missing=0
	for uid in $uids; do
		grep -qs -- "\"$uid\"" "$statedir"/archive/*.json || missing=$((missing + 1))
	done
	if ((missing > 0)); then
		warn "$missing of the deleted TeamSpaces have no archive record in $statedir/archive (another node's hook?)"
	else
		say "every deleted TeamSpace is archived in $statedir/archive"
	fi
	say "DELETING CRD $TS_CRD (annotated $TS_ALLOW_DELETE=true first, as the guard rails require)"
	kc annotate --overwrite crd "$TS_CRD" "$TS_ALLOW_DELETE=true" >&2
	del crd "$TS_CRD"
	say "deleting the platform ($deploy_dir/kustomization.yaml) and the limits ConfigMap"
	platform_manifests kc | del -f -
	del -f "$deploy_dir/limits-config.yaml"
elif [[ -n $have_crd ]]; then
	busy=$(deleting)
	if [[ -n $busy ]]; then
		[[ -n $wait_deleting ]] || die "these TeamSpaces are being deleted and need the engine to finish: $(one_line <<<"$busy"). Nothing removed; run again once they are gone (kubectl get teamspaces), or with --wait"
		wait_gone "TeamSpaces being deleted" deleting
	fi
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
	# waits for a reinstall, which finishes it (archive, namespace, gone).
	say "removing CompositeController $TS_COMPOSITECONTROLLER and DecoratorControllers $TS_QUOTAS_CONTROLLER, $TS_TEMPLATES_CONTROLLER, $TS_ADOPTED_CONTROLLER"
	if kc get crd compositecontrollers.metacontroller.k8s.io >/dev/null 2>&1; then
		del compositecontrollers.metacontroller.k8s.io "$TS_COMPOSITECONTROLLER"
	fi
	if kc get crd decoratorcontrollers.metacontroller.k8s.io >/dev/null 2>&1; then
		del decoratorcontrollers.metacontroller.k8s.io "$TS_QUOTAS_CONTROLLER"
		del decoratorcontrollers.metacontroller.k8s.io "$TS_TEMPLATES_CONTROLLER"
		del decoratorcontrollers.metacontroller.k8s.io "$TS_ADOPTED_CONTROLLER"
	fi
	say "removing the engine's credential and RBAC"
	del -n "$TS_NAMESPACE" secret "$TS_TOKEN_SECRET" 2>/dev/null || true
	del -f "$deploy_dir/rbac-leader-election.yaml" 2>/dev/null || true
	del clusterrolebinding teamspace-metacontroller
	del clusterrole teamspace-metacontroller
	del -n "$TS_NAMESPACE" serviceaccount "$TS_SERVICE_ACCOUNT" 2>/dev/null || true
	# The namespace goes too, unless something else lives there (e.g. the
	# in-cluster hook of hack/deploy/kustomize) or the platform limits do
	# (ConfigMap teamspace-limits: it stays while the CRD stays, see above).
	if kc get namespace "$TS_NAMESPACE" >/dev/null 2>&1; then
		others=$({
			kc -n "$TS_NAMESPACE" get deployments,statefulsets,daemonsets,pods,services,persistentvolumeclaims -o name
			kc -n "$TS_NAMESPACE" get configmap teamspace-limits -o name --ignore-not-found
		} 2>/dev/null || true)
		if [[ -z $others ]]; then
			kc delete namespace "$TS_NAMESPACE" --ignore-not-found --wait=true --timeout=120s >&2 ||
				warn "namespace $TS_NAMESPACE is still terminating"
		else
			say "keeping namespace $TS_NAMESPACE: it holds $(wc -l <<<"$others") other objects"
		fi
	fi
fi

# --- host files -------------------------------------------------------------
rm -f "$engine_kubeconfig" "$confdir/compositecontroller.yaml"
for u in "${TS_UNITS[@]}"; do
	rm -f "$unitdir/$u.service"
done
[[ $SERVICE_MANAGER != systemd ]] || systemctl daemon-reload
rm -f "$bindir/teamspace-hook" "$bindir/metacontroller"
rmdir "$confdir" 2>/dev/null || true
say "done. Kept: the archive in $statedir$([[ -n $delete_teamspaces ]] || printf '%s' ", the TeamSpace CRD, all TeamSpaces and their namespaces") and Metacontroller's CRDs."
