#!/usr/bin/env bash
# hack/deploy/install.sh: install TeamSpace on a node without container
# images (k3s or any cluster reachable from this host): the hook and
# Metacontroller as systemd services, the CRDs, a narrowed RBAC and the
# CompositeController. Idempotent: run it again to upgrade or repair.
#
# Usage: hack/deploy/install.sh [options]
#   --metacontroller-crds=PATH|URL  Metacontroller's CRD manifest
#                        (env METACONTROLLER_CRDS; default: the pinned release's
#                        manifests/production/metacontroller-crds-v1.yaml URL)
#   --service-manager=systemd|none  (env SERVICE_MANAGER, default systemd).
#                        none: start the units' ExecStart= command lines in the
#                        background with pid files under $DESTDIR/run/teamspace
#                        and logs under $DESTDIR/var/log/teamspace (tests, or
#                        hosts without systemd)
#   --destdir=DIR        (env DESTDIR) install everything under DIR; needs
#                        SERVICE_MANAGER=none; the installed files point into DIR
#   --prefix=DIR         (env PREFIX, default /usr/local) binaries go to DIR/bin
#   --hook-address=HOST:PORT          (env HOOK_ADDRESS, default 127.0.0.1:8080)
#                        where the hook listens and Metacontroller calls it
#   --metrics-address=HOST:PORT       (env METACONTROLLER_METRICS_ADDRESS,
#                        default 127.0.0.1:9999)
#   --health-address=HOST:PORT        (env METACONTROLLER_HEALTH_ADDRESS,
#                        default 127.0.0.1:8081)
#   -h, --help
# Environment:
#   KUBECONFIG           a cluster-admin kubeconfig used by this script only
#                        (default /etc/rancher/k3s/k3s.yaml). Metacontroller
#                        gets its own credential, /etc/teamspace/metacontroller.kubeconfig,
#                        for ServiceAccount teamspace-system/metacontroller.
#   METACONTROLLER_BIN   the Metacontroller binary to install (else the one on
#                        PATH, else the one already installed). Get it from
#                        https://github.com/metacontroller/metacontroller/releases
#   HOOK_BIN             a prebuilt teamspace-hook (default: go build ./hook)
#   KUBECTL, GO          the kubectl and go commands (default from PATH)
set -euo pipefail
export LC_ALL=C
prog=install.sh
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# METACONTROLLER_VERSION: hack/deploy/lib.sh, the one place it is pinned.
default_crds="https://raw.githubusercontent.com/metacontroller/metacontroller/$METACONTROLLER_VERSION/manifests/production/metacontroller-crds-v1.yaml"

while (($# > 0)); do
	case $1 in
	--metacontroller-crds=*) METACONTROLLER_CRDS=${1#*=} ;;
	--service-manager=*) SERVICE_MANAGER=${1#*=} ;;
	--destdir=*) DESTDIR=${1#*=} ;;
	--prefix=*) PREFIX=${1#*=} ;;
	--hook-address=*) HOOK_ADDRESS=${1#*=} ;;
	--metrics-address=*) METACONTROLLER_METRICS_ADDRESS=${1#*=} ;;
	--health-address=*) METACONTROLLER_HEALTH_ADDRESS=${1#*=} ;;
	*) other_arg "$1" ;;
	esac
	shift
done

load_settings
METACONTROLLER_CRDS=${METACONTROLLER_CRDS:-$default_crds}
HOOK_ADDRESS=${HOOK_ADDRESS:-127.0.0.1:8080}
METACONTROLLER_METRICS_ADDRESS=${METACONTROLLER_METRICS_ADDRESS:-127.0.0.1:9999}
METACONTROLLER_HEALTH_ADDRESS=${METACONTROLLER_HEALTH_ADDRESS:-127.0.0.1:8081}
GO=${GO:-go}
for a in "$HOOK_ADDRESS" "$METACONTROLLER_METRICS_ADDRESS" "$METACONTROLLER_HEALTH_ADDRESS"; do
	[[ $a =~ ^[A-Za-z0-9.:_-]+:[0-9]+$ ]] || die "not a HOST:PORT address: '$a'"
done
case ${HOOK_ADDRESS%:*} in
127.* | localhost | ::1 | \[::1\]) ;;
*) warn "the hook will listen on $HOOK_ADDRESS, not loopback: it has no authentication in this setup, and teamspace-hook.service allows loopback peers only (IPAddressAllow=localhost)" ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# --- preflight --------------------------------------------------------------
# ours_running UNIT: this install's UNIT runs (so its port is ours).
ours_running() {
	if [[ $SERVICE_MANAGER == systemd ]]; then
		systemctl is-active --quiet "$1.service" 2>/dev/null
	else
		pid_owned "$rundir/$1.pid" "$bindir/" >/dev/null
	fi
}

# preflight checks everything that can be checked before anything is
# changed, so that a bad input fails with one line naming the cause and
# leaves no binary, unit or cluster object behind; a re-run after the fix
# starts from scratch.
preflight() {
	command -v curl >/dev/null || die "curl not found: install.sh checks the services' /healthz with it"
	command -v "$KUBECTL" >/dev/null || die "kubectl not found (k3s: ln -s /usr/local/bin/k3s /usr/local/bin/kubectl, or set KUBECTL)"
	if [[ $SERVICE_MANAGER == systemd ]]; then
		[[ $(id -u) == 0 ]] || die "run as root (or SERVICE_MANAGER=none with a DESTDIR)"
		command -v systemctl >/dev/null || die "systemctl not found; use SERVICE_MANAGER=none"
		[[ -d /run/systemd/system ]] || die "systemd is not running as init here; use SERVICE_MANAGER=none"
	fi
	if [[ -n ${KUBECONFIG:-} && ! -r ${KUBECONFIG%%:*} ]]; then
		die "KUBECONFIG=$KUBECONFIG: no such readable file"
	fi
	default_kubeconfig
	local server
	server=$(kc config view --minify -o 'jsonpath={.clusters[0].cluster.server}' 2>/dev/null || true)
	kc --request-timeout=10s version >/dev/null 2>&1 || die "cannot reach the API server ${server:-(none configured)} with KUBECONFIG=$KUBECONFIG ($KUBECTL version failed)"
	# Told before anything changes: namespaces.yaml keeps new ones from
	# appearing, these existed already.
	local unowned
	unowned=$(unowned_team_namespaces kc 2>/dev/null || true)
	if [[ -n $unowned ]]; then
		warn "team-* namespaces that no TeamSpace owns (a TeamSpace of that name will say NamespaceConflict; delete or rename them if they are not a team's): $(one_line <<<"$unowned")"
	fi
	mc_bin=${METACONTROLLER_BIN:-}
	if [[ -z $mc_bin ]]; then
		mc_bin=$(command -v metacontroller || true)
	fi
	if [[ -n $mc_bin ]]; then
		[[ -f $mc_bin && -x $mc_bin ]] || die "METACONTROLLER_BIN=$mc_bin is not an executable file"
		# the changes proposed upstream are measured by hack/bench.sh, never installed
		local mc_version
		mc_version=$(metacontroller_bin_version "$mc_bin")
		[[ $mc_version != *+* ]] || refuse_changed_engine "METACONTROLLER_BIN=$mc_bin" "$mc_version"
	elif [[ ! -x $bindir/metacontroller ]]; then
		die "no Metacontroller binary: download metacontroller_*_Linux_*.tar.gz of $METACONTROLLER_VERSION from https://github.com/metacontroller/metacontroller/releases and set METACONTROLLER_BIN=/path/to/metacontroller (see hack/deploy/README.md)"
	fi
	if [[ -n ${HOOK_BIN:-} ]]; then
		[[ -x $HOOK_BIN ]] || die "HOOK_BIN=$HOOK_BIN is not executable"
	else
		command -v "$GO" >/dev/null || die "go not found: install Go (see go.mod for the version) or set HOOK_BIN"
	fi
	local check unit addr what
	for check in "teamspace-hook $HOOK_ADDRESS HOOK_ADDRESS" \
		"metacontroller $METACONTROLLER_METRICS_ADDRESS METACONTROLLER_METRICS_ADDRESS" \
		"metacontroller $METACONTROLLER_HEALTH_ADDRESS METACONTROLLER_HEALTH_ADDRESS"; do
		read -r unit addr what <<<"$check"
		if port_in_use "$addr" && ! ours_running "$unit"; then
			die "port $addr ($what, for $unit) is already in use by another process: stop it or choose another address (--help)"
		fi
	done
}
preflight

# --- binaries ---------------------------------------------------------------
mkdir -p "$bindir"
if [[ -n ${HOOK_BIN:-} ]]; then
	[[ -x $HOOK_BIN ]] || die "HOOK_BIN=$HOOK_BIN is not executable"
	cp "$HOOK_BIN" "$tmp/teamspace-hook"
else
	command -v "$GO" >/dev/null || die "go not found: install Go (see go.mod for the version) or set HOOK_BIN"
	say "building the hook from $repo"
	(cd "$repo" && CGO_ENABLED=0 "$GO" build -trimpath -o "$tmp/teamspace-hook" ./hook)
fi
# install_bin SRC NAME: replace $bindir/NAME atomically (rename), so that a
# running binary is no obstacle ("text file busy").
install_bin() {
	install -m 0755 "$1" "$bindir/.$2.new"
	mv -f "$bindir/.$2.new" "$bindir/$2"
	say "installed $bindir/$2"
}
install_bin "$tmp/teamspace-hook" teamspace-hook

# mc_bin: chosen and checked by preflight.
if [[ -n $mc_bin ]]; then
	if [[ $(readlink -f "$mc_bin") != $(readlink -f "$bindir/metacontroller" 2>/dev/null || true) ]]; then
		install_bin "$mc_bin" metacontroller
	fi
fi

# --- user and directories ---------------------------------------------------
if [[ $SERVICE_MANAGER == systemd ]]; then
	if ! getent passwd teamspace >/dev/null; then
		say "creating system user teamspace"
		useradd --system --user-group --home-dir /var/lib/teamspace --no-create-home \
			--shell /usr/sbin/nologin --comment "TeamSpace hook" teamspace
	fi
	# The archive itself is created by StateDirectory= (owned by teamspace).
else
	mkdir -p "$statedir/archive"
fi
mkdir -p "$confdir" "$unitdir"
chmod 0755 "$confdir"

# --- units ------------------------------------------------------------------
# The unit files of this directory, with the paths and addresses of this
# install (identity for a default install).
install_unit() {
	local name=$1
	sed -e "s|/usr/local/bin/|$bindir/|g" \
		-e "s|/etc/teamspace/|$confdir/|g" \
		-e "s|/var/lib/teamspace/|$statedir/|g" \
		-e "s|127\.0\.0\.1:8080|$HOOK_ADDRESS|g" \
		-e "s|127\.0\.0\.1:9999|$METACONTROLLER_METRICS_ADDRESS|g" \
		-e "s|127\.0\.0\.1:8081|$METACONTROLLER_HEALTH_ADDRESS|g" \
		"$deploy_dir/systemd/$name.service" >"$tmp/$name.service"
	if ! cmp -s "$tmp/$name.service" "$unitdir/$name.service"; then
		install -m 0644 "$tmp/$name.service" "$unitdir/$name.service"
		say "installed $unitdir/$name.service"
	fi
}
for u in "${TS_UNITS[@]}"; do
	install_unit "$u"
done

# --- cluster objects --------------------------------------------------------
apply() { kc apply --server-side --force-conflicts --field-manager=teamspace-install "$@"; }

say "applying Metacontroller's CRDs from $METACONTROLLER_CRDS"
apply -f "$METACONTROLLER_CRDS" >&2
say "applying $repo/crd.yaml and the engine's identity, $deploy_dir/rbac.yaml"
apply -f "$repo/crd.yaml" -f "$deploy_dir/rbac.yaml" >&2
say "applying the platform, $deploy_dir/kustomization.yaml: the roles, the guard rails and the admission policies"
platform_manifests kc | apply -f - >&2
say "team-* namespaces: only the engine (ServiceAccount $TS_NAMESPACE/$TS_SERVICE_ACCOUNT, ClusterRole teamspace-metacontroller), system:masters and holders of ClusterRole teamspace-team-namespaces may create them"
ensure_limits_config kc
kc wait --for=condition=Established --timeout=60s \
	crd/compositecontrollers.metacontroller.k8s.io crd/decoratorcontrollers.metacontroller.k8s.io crd/"$TS_CRD" >&2
wait_teamspaces_admitted kc || die "TeamSpaces are not admitted; see the API server's log"

# The engine's credential: a long-lived token of ServiceAccount
# teamspace-system/metacontroller (a token Secret, filled in by the token
# controller of kube-controller-manager; k3s runs it), which rbac.yaml binds
# to the narrowed ClusterRole.
apply -f - >&2 <<EOF
apiVersion: v1
kind: Secret
metadata:
  name: $TS_TOKEN_SECRET
  namespace: $TS_NAMESPACE
  labels:
    app.kubernetes.io/part-of: teamspace
  annotations:
    kubernetes.io/service-account.name: $TS_SERVICE_ACCOUNT
type: kubernetes.io/service-account-token
EOF
token=""
for ((i = 0; i < 60; i++)); do
	token=$(kc -n "$TS_NAMESPACE" get secret "$TS_TOKEN_SECRET" -o jsonpath='{.data.token}')
	[[ -n $token ]] && break
	sleep 1
done
[[ -n $token ]] || die "secret $TS_NAMESPACE/$TS_TOKEN_SECRET got no token within 60 s: is kube-controller-manager running with --service-account-private-key-file (its token controller fills it in)?"
token=$(base64 -d <<<"$token")

server=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(kc config view --minify --raw --flatten -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
if [[ -z $ca ]]; then
	ca=$(kc -n "$TS_NAMESPACE" get secret "$TS_TOKEN_SECRET" -o jsonpath='{.data.ca\.crt}')
fi
[[ -n $server && -n $ca ]] || die "cannot find the API server address and CA in KUBECONFIG=$KUBECONFIG"
tls_server_name=$(kc config view --minify -o jsonpath='{.clusters[0].cluster.tls-server-name}')

(
	umask 077
	cat >"$tmp/engine.kubeconfig" <<EOF
# Written by hack/deploy/install.sh: Metacontroller's credential,
# ServiceAccount $TS_NAMESPACE/$TS_SERVICE_ACCOUNT (ClusterRole teamspace-metacontroller).
apiVersion: v1
kind: Config
clusters:
  - name: cluster
    cluster:
      server: $server
      certificate-authority-data: $ca${tls_server_name:+
      tls-server-name: $tls_server_name}
users:
  - name: $TS_SERVICE_ACCOUNT
    user:
      token: $token
contexts:
  - name: metacontroller
    context:
      cluster: cluster
      user: $TS_SERVICE_ACCOUNT
current-context: metacontroller
EOF
)
if ! cmp -s "$tmp/engine.kubeconfig" "$engine_kubeconfig"; then
	install -m 0600 "$tmp/engine.kubeconfig" "$engine_kubeconfig"
	say "wrote $engine_kubeconfig"
fi
# Sanity: the credential works and is the narrowed one.
[[ $(kc --kubeconfig="$engine_kubeconfig" auth can-i update "$TS_CRD") == yes ]] ||
	die "$engine_kubeconfig cannot update TeamSpaces: is rbac.yaml applied?"
if [[ $(kc --kubeconfig="$engine_kubeconfig" auth can-i get secrets --all-namespaces 2>/dev/null || true) == yes ]]; then
	warn "$engine_kubeconfig can read Secrets: ServiceAccount $TS_NAMESPACE/$TS_SERVICE_ACCOUNT has more rights than rbac.yaml grants (another binding?)"
fi
unset token

# --- services ---------------------------------------------------------------
# (Re)started every time, so that new binaries, units and credentials take
# effect. The hook first, so that the engine's first calls find it.
if [[ $SERVICE_MANAGER == systemd ]]; then
	systemctl daemon-reload
	systemctl enable "${TS_UNITS[@]/%/.service}" >&2
	for u in "${TS_UNITS[@]}"; do
		systemctl restart "$u.service"
	done
else
	for u in "${TS_UNITS[@]}"; do
		none_start "$u"
	done
fi

# healthy NAME URL: NAME answers URL within 30 s, or the install stops
# with where to look.
healthy() {
	wait_http "$2" 30 && return 0
	if [[ $SERVICE_MANAGER == systemd ]]; then
		die "$1 is not healthy at $2: see journalctl -u $1.service"
	fi
	die "$1 is not healthy at $2: see $logdir/$1.log"
}
healthy teamspace-hook "http://$HOOK_ADDRESS/healthz"
healthy metacontroller "http://$METACONTROLLER_HEALTH_ADDRESS/healthz"

# Last: the CompositeController and the DecoratorControllers (the quotas',
# the templates' bundle), their
# hook URLs at this install's hook, kept as applied in $confdir (what the
# walkthrough on a node re-applies); then the quotas made before the
# DecoratorController are handed over to it (hand-over-quotas.sh).
compositecontroller_at "http://$HOOK_ADDRESS" >"$tmp/compositecontroller.yaml"
install -m 0644 "$tmp/compositecontroller.yaml" "$confdir/compositecontroller.yaml"
say "applying the CompositeController and the DecoratorControllers (hook at http://$HOOK_ADDRESS)"
apply -f "$confdir/compositecontroller.yaml" >&2
handed=$(hand_over_quotas kc)
((handed == 0)) || say "handed $handed quota(s) made before it over to DecoratorController $TS_QUOTAS_CONTROLLER"

say "done. Try: kubectl apply -f - <<<'{\"apiVersion\":\"platform.labhub.io/v1alpha1\",\"kind\":\"TeamSpace\",\"metadata\":{\"name\":\"demo\"},\"spec\":{\"pods\":5}}'; kubectl get teamspaces"
