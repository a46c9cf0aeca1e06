#!/usr/bin/env bash
# hack/up.sh: a complete local TeamSpace setup on this machine, for trying
# things out and for tests/e2e:
#   - the control plane of hack/cluster.sh (kine or etcd, kube-apiserver,
#     kube-controller-manager on loopback),
#   - the hook, built from this checkout, archiving under the state directory,
#   - Metacontroller as a host process using the cluster's kubeconfig,
#   - Metacontroller's CRDs, crd.yaml, the shipped roles, the guard rails
#     (hack/deploy/guardrails.yaml), the platform limits (limits.yaml and,
#     when missing, limits-config.yaml), requested-by.yaml, the reserved
#     team- prefix (namespaces.yaml; the engine here runs as the admin) and
#     (unless --no-controller)
#     compositecontroller.yaml, its hook URLs pointed at the local hook,
#   - a demo TeamSpace, demo (4 pods, 500m cpu), waited for until Ready
#     (unless --no-demo or --no-controller).
# With --ha, the layout of hack/deploy/README.md "Several servers" on one
# machine: two engines with leader election, and two hooks sharing the one
# URL the controllers name (--reuse-port), so that either of each may be
# killed while the other carries on (the fault run of issue #67).
#
# Usage:
#   hack/up.sh [up] [--no-controller] [--no-demo] [--ha]
#                                      start everything (idempotent: what runs is kept)
#   hack/up.sh env                     print the exports for the running setup
#   hack/up.sh engine-stop [a|b]       stop Metacontroller (PID file), nothing else
#   hack/up.sh engine-start [a|b]      start Metacontroller again with the same flags
#   hack/up.sh hook-stop [a|b]         stop the hook (PID file), nothing else
#   hack/up.sh hook-start [a|b]        start the hook again
#                                      (a or b: one of the two of --ha; neither: all)
#   hack/up.sh stop                    stop Metacontroller and the hook (PID files)
#   hack/up.sh status                  tell what is running
# hack/down.sh stops everything again.
#
# Environment:
#   METACONTROLLER_BIN   the Metacontroller binary (else `metacontroller` on PATH,
#                        else built once from its source at the version
#                        hack/deploy/lib.sh pins: METACONTROLLER_SRC, or
#                        ../shared/metacontroller/<version>, or a clone of the tag).
#   METACONTROLLER_CRDS  Metacontroller's CRD manifest (metacontroller-crds-v1.yaml
#                        of its release); default ../shared/metacontroller/ beside
#                        this repository when present, else the one in the engine's
#                        own source tree (manifests/production/, of the tree the
#                        engine is built from: METACONTROLLER_SRC, or a clone of the tag).
#   TEAMSPACE_STATE      state directory (passed on to hack/cluster.sh, which
#                        picks the default).
#   HOOK_PORT            port for the hook (default: 8080 if free, else the next
#                        free one from 18080).
#   METACONTROLLER_ARGS  extra flags for Metacontroller (word-split).
#   HOOK_ARCHIVE_ARGS    the hook's archive flags (word-split; default
#                        --archive-dir=<state>/archive), e.g. the
#                        --archive-s3-* flags of a bucket.
#   TEAMSPACE_NO_CONTROLLER=1  same as --no-controller.
#   TEAMSPACE_NO_DEMO=1        same as --no-demo.
#   TEAMSPACE_HA=1             same as --ha.
set -euo pipefail
export LC_ALL=C

prog=up.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
repo=$TEAMSPACE_ROOT
cluster_sh="$repo/hack/cluster.sh"

# find_engine prints the Metacontroller binary to use: METACONTROLLER_BIN,
# else `metacontroller` on PATH, else the one ensure_metacontroller builds
# once from its source at the pinned tag (hack/deploy/lib.sh); or says in one line
# how to provide one.
find_engine() {
	require_metacontroller "hack/up.sh (nothing has been started)"
	printf '%s\n' "$(cd "$(dirname "$METACONTROLLER_BIN")" && pwd)/$(basename "$METACONTROLLER_BIN")"
}

# find_engine_crds prints Metacontroller's CRD manifest: METACONTROLLER_CRDS,
# else the one in ../shared/metacontroller/ beside the checkout, else the
# one of the engine's source tree at the pinned tag (metacontroller_source:
# METACONTROLLER_SRC, ../shared/metacontroller/<version>, or a clone), so
# that a clone without ../shared beside it comes up too.
find_engine_crds() {
	local f=${METACONTROLLER_CRDS:-$repo/../shared/metacontroller/metacontroller-crds-v1.yaml}
	if [[ -z ${METACONTROLLER_CRDS:-} && ! -r $f ]] && metacontroller_source; then
		f=$METACONTROLLER_SOURCE/manifests/production/metacontroller-crds-v1.yaml
	fi
	if [[ ! -r $f ]]; then
		die "Metacontroller's CRDs not found at $f: set METACONTROLLER_CRDS to the
metacontroller-crds-v1.yaml of Metacontroller's release (manifests/production/ in its
repository at tag ${METACONTROLLER_VERSION}). Nothing has been started."
	fi
	printf '%s\n' "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")"
}

# free_port FIRST [AVOID...]: the first port from FIRST up that is free and not in AVOID.
free_port() {
	local p=$1 a
	shift
	while :; do
		local taken=
		for a in "$@"; do [[ $a == "$p" ]] && taken=1; done
		if [[ -z $taken ]] && ! port_in_use "$p"; then
			printf '%s\n' "$p"
			return
		fi
		p=$((p + 1))
		((p < 65000)) || die "no free port found"
	done
}

# cluster_env: import the exports of hack/cluster.sh env (KUBECONFIG, PATH, TEAMSPACE_STATE).
cluster_env() {
	[[ -x $cluster_sh ]] || die "$cluster_sh not found or not executable"
	local out
	out=$("$cluster_sh" env) || die "hack/cluster.sh env failed"
	eval "$out"
	[[ -n ${KUBECONFIG:-} ]] || die "hack/cluster.sh env printed no KUBECONFIG"
	[[ -n ${TEAMSPACE_STATE:-} ]] || die "hack/cluster.sh env printed no TEAMSPACE_STATE"
	export KUBECONFIG TEAMSPACE_STATE PATH
	state=$TEAMSPACE_STATE
	updir=$state/up
	upenv=$updir/up.env
}

# pid_alive PIDFILE: its process runs and is ours (its command line names the
# state directory).
pid_alive() {
	pid_owned "$1" "$state" >/dev/null
}

# wait_up URL PIDFILE LOG WHAT: wait until URL answers while the process
# lives; else show the end of its log and exit.
wait_up() {
	local url=$1 pidfile=$2 log=$3 what=$4 rc=0
	wait_http "$url" 30 pid_alive "$pidfile" || rc=$?
	case $rc in
	0) return 0 ;;
	2) say "$what exited; last lines of $log:"; rm -f "$pidfile" ;;
	*) say "$what did not answer $url within 30 s; last lines of $log:" ;;
	esac
	tail -n 30 "$log" >&2 || true
	exit 1
}

# stop_pid PIDFILE WHAT: SIGTERM, up to 15 s, then SIGKILL; removes the PID file.
stop_pid() {
	[[ -f $1 ]] || { say "$2: not started here (no $1)"; return 0; }
	stop_owned "$1" "$state" "$2" 15
}

load_upenv() {
	[[ -r $upenv ]] || die "no $upenv: run hack/up.sh first"
	# shellcheck source=/dev/null
	source "$upenv"
}

# running PIDFILE WHAT: true, and says so, when WHAT runs already.
running() {
	pid_alive "$1" || return 1
	say "$2 already running (pid $(cat "$1"))"
}

# instances are the engine or hook instances of the setup, or the one
# named (a, b): a alone, a and b with --ha.
instances() {
	case ${1:-} in
	"") if [[ ${TEAMSPACE_HA:-} == 1 ]]; then echo a b; else echo a; fi ;;
	a) echo a ;;
	b) [[ ${TEAMSPACE_HA:-} == 1 ]] || die "instance b runs only with --ha"; echo b ;;
	*) die "unknown instance '$1': a or b" ;;
	esac
}

# suffix is the files' suffix of instance a or b: none for a, as without
# --ha.
suffix() { [[ $1 == a ]] || printf -- '-%s' "$1"; }

engine_start() {
	load_upenv
	instances "${1:-}" >/dev/null # a wrong name stops here, not in a subshell
	local i
	for i in $(instances "${1:-}"); do
		engine_start_one "$i"
	done
}

engine_start_one() {
	local i=$1 metrics=$TEAMSPACE_ENGINE_METRICS_PORT health=$TEAMSPACE_ENGINE_HEALTH_PORT
	local sfx pidfile log
	sfx=$(suffix "$i")
	pidfile=$updir/run/metacontroller$sfx.pid log=$updir/logs/metacontroller$sfx.log
	[[ $i == b ]] && metrics=$TEAMSPACE_ENGINE_B_METRICS_PORT health=$TEAMSPACE_ENGINE_B_HEALTH_PORT
	running "$pidfile" "Metacontroller $i" && return 0
	# The ports saved in up.env may have been taken meanwhile; another
	# engine answering the health check must not pass for this one.
	if curl -fsS -o /dev/null --max-time 1 "http://127.0.0.1:$health/healthz" 2>/dev/null; then
		die "127.0.0.1:$health already answers: another process holds the engine's port saved in $upenv; run hack/down.sh, then hack/up.sh"
	fi
	local -a extra=() tuning=() leader=()
	# shellcheck disable=SC2206 # word-splitting is the documented behaviour
	[[ -n ${TEAMSPACE_ENGINE_EXTRA_ARGS:-} ]] && extra=($TEAMSPACE_ENGINE_EXTRA_ARGS)
	# shellcheck disable=SC2207 # flags separated by spaces, as in the unit
	tuning=($(engine_tuning_flags))
	# One leader of two, as on several servers (hack/deploy/README.md).
	[[ ${TEAMSPACE_HA:-} == 1 ]] && leader=(--leader-election --leader-election-namespace=teamspace-system)
	start_bg "$pidfile" "$log" "$TEAMSPACE_ENGINE_BIN" \
		--kubeconfig="$KUBECONFIG" \
		"${tuning[@]}" \
		--discovery-interval=2s \
		--metrics-address="127.0.0.1:$metrics" \
		--health-probe-bind-address="127.0.0.1:$health" \
		--pprof-address=0 \
		"${leader[@]}" \
		"${extra[@]}"
	wait_up "http://127.0.0.1:$health/healthz" "$pidfile" "$log" "Metacontroller $i"
	sleep 0.3
	pid_alive "$pidfile" || { tail -n 30 "$log" >&2; die "Metacontroller $i exited right after starting (log $log)"; }
	say "Metacontroller $i running (pid $(cat "$pidfile")), log $log"
}

engine_stop() {
	instances "${1:-}" >/dev/null
	local i
	for i in $(instances "${1:-}"); do
		stop_pid "$updir/run/metacontroller$(suffix "$i").pid" "Metacontroller $i"
	done
}

hook_start() {
	load_upenv
	instances "${1:-}" >/dev/null # a wrong name stops here, not in a subshell
	local i
	for i in $(instances "${1:-}"); do
		hook_start_one "$i"
	done
}

hook_start_one() {
	local i=$1
	local sfx pidfile log
	sfx=$(suffix "$i")
	pidfile=$updir/run/hook$sfx.pid log=$updir/logs/hook$sfx.log
	running "$pidfile" "hook $i" && return 0
	local -a archive_args=("--archive-dir=$TEAMSPACE_ARCHIVE_DIR") shared=()
	# shellcheck disable=SC2206 # word-splitting is the documented behaviour
	[[ -n ${TEAMSPACE_HOOK_ARCHIVE_ARGS:-} ]] && archive_args=($TEAMSPACE_HOOK_ARCHIVE_ARGS)
	# Two hooks behind the one URL the controllers name.
	[[ ${TEAMSPACE_HA:-} == 1 ]] && shared=(--reuse-port)
	start_bg "$pidfile" "$log" "$updir/bin/teamspace-hook" \
		--listen-address="127.0.0.1:$TEAMSPACE_HOOK_PORT" \
		"${archive_args[@]}" \
		"${shared[@]}" \
		--log-level=info
	wait_up "$TEAMSPACE_HOOK_URL/healthz" "$pidfile" "$log" "hook $i"
	# With --ha the other hook may have answered: this one must live.
	sleep 0.3
	pid_alive "$pidfile" || { tail -n 30 "$log" >&2; die "hook $i exited right after starting (log $log)"; }
	say "hook $i running (pid $(cat "$pidfile")) on $TEAMSPACE_HOOK_URL, log $log"
}

hook_stop() {
	instances "${1:-}" >/dev/null
	local i
	for i in $(instances "${1:-}"); do
		stop_pid "$updir/run/hook$(suffix "$i").pid" "hook $i"
	done
}

# apply_controller applies the setup's CompositeController: its hook URLs
# at the local hook, rendered once by up (hack/lib.sh compositecontroller_at)
# into $updir/compositecontroller.yaml, which `env` names for the tests.
apply_controller() {
	load_upenv
	kubectl apply -f "$updir/compositecontroller.yaml" >&2
}

# demo_up creates TeamSpace demo (kept as it is when it exists) and waits
# until it is Ready, as the README's first command promises.
demo_up() {
	if kubectl get teamspace demo >/dev/null 2>&1; then
		say "TeamSpace demo exists: kept as it is; waiting until it is Ready"
	else
		say "TeamSpace demo: creating it and waiting until it is Ready"
		# A CRD just created is served a moment before the admission
		# policies matching it can type its objects: until then a create
		# is refused as ServiceUnavailable ("Resource kind ... not found").
		local i out
		for ((i = 0; ; i++)); do
			out=$(kubectl create -f - 2>&1 <<'YAML'
apiVersion: platform.labhub.io/v1alpha1
kind: TeamSpace
metadata:
  name: demo
spec:
  pods: 4
  cpu: 500m
YAML
) && break
			[[ $out == *ServiceUnavailable* && $i -lt 60 ]] || die "creating TeamSpace demo: $out"
			sleep 0.5
		done
		printf '%s\n' "$out" >&2
	fi
	kubectl wait --for=condition=Ready --timeout=120s teamspace/demo >&2 ||
		die "TeamSpace demo is not Ready after 120 s: $(kubectl get teamspace demo -o jsonpath='{.status.conditions[0].reason}: {.status.conditions[0].message}' 2>&1); see $updir/logs"
	kubectl get teamspaces >&2
}

print_env() {
	load_upenv
	cat <<EOF
export KUBECONFIG=$(printf '%q' "$KUBECONFIG")
export PATH=$(printf '%q' "$PATH")
export TEAMSPACE_STATE=$(printf '%q' "$TEAMSPACE_STATE")
export TEAMSPACE_HOOK_URL=$(printf '%q' "$TEAMSPACE_HOOK_URL")
export TEAMSPACE_ARCHIVE_DIR=$(printf '%q' "$TEAMSPACE_ARCHIVE_DIR")
export TEAMSPACE_COMPOSITECONTROLLER=$(printf '%q' "$updir/compositecontroller.yaml")
EOF
}

up() {
	local no_controller=${TEAMSPACE_NO_CONTROLLER:-} no_demo=${TEAMSPACE_NO_DEMO:-} ha=${TEAMSPACE_HA:-}
	while (($#)); do
		case $1 in
		--no-controller) no_controller=1 ;;
		--no-demo) no_demo=1 ;;
		--ha) ha=1 ;;
		*) other_arg "$1" ;;
		esac
		shift
	done
	[[ $no_controller == 0 ]] && no_controller=
	[[ $no_demo == 0 ]] && no_demo=
	[[ $ha == 1 ]] || ha=

	# Everything that can be missing is checked before anything starts.
	local engine_bin engine_crds
	engine_bin=$(find_engine)
	engine_crds=$(find_engine_crds)
	command -v go >/dev/null || die "go not found: the hook is built from this checkout"
	command -v curl >/dev/null || die "curl not found (apt-get install -y curl)"
	command -v setsid >/dev/null || die "setsid not found (util-linux)"
	[[ -x $cluster_sh ]] || die "$cluster_sh not found or not executable"

	say "control plane: hack/cluster.sh up"
	"$cluster_sh" up >&2
	cluster_env
	mkdir -p "$updir/bin" "$updir/logs" "$updir/run" "$state/archive"

	# Ports: kept from an earlier up while its processes live, else chosen anew.
	local hook_port engine_metrics engine_health engine_b_metrics engine_b_health
	if [[ -r $upenv ]] && { pid_alive "$updir/run/hook.pid" || pid_alive "$updir/run/metacontroller.pid"; }; then
		# shellcheck source=/dev/null
		source "$upenv"
		[[ ${TEAMSPACE_HA:-} == "$ha" ]] || die "the running setup was started $([[ -n ${TEAMSPACE_HA:-} ]] && echo with || echo without) --ha: hack/down.sh first"
		hook_port=$TEAMSPACE_HOOK_PORT
		engine_metrics=$TEAMSPACE_ENGINE_METRICS_PORT
		engine_health=$TEAMSPACE_ENGINE_HEALTH_PORT
		engine_b_metrics=${TEAMSPACE_ENGINE_B_METRICS_PORT:-}
		engine_b_health=${TEAMSPACE_ENGINE_B_HEALTH_PORT:-}
	else
		if [[ -n ${HOOK_PORT:-} ]]; then
			hook_port=$HOOK_PORT
			port_in_use "$hook_port" && die "HOOK_PORT $hook_port is in use"
		elif ! port_in_use 8080; then
			hook_port=8080
		else
			hook_port=$(free_port 18080)
		fi
		engine_metrics=$(free_port 19999 "$hook_port")
		engine_health=$(free_port 18081 "$hook_port" "$engine_metrics")
		engine_b_metrics='' engine_b_health=
		if [[ -n $ha ]]; then
			engine_b_metrics=$(free_port 19998 "$hook_port" "$engine_metrics" "$engine_health")
			engine_b_health=$(free_port 18082 "$hook_port" "$engine_metrics" "$engine_health" "$engine_b_metrics")
		fi
	fi
	{
		printf '# written by hack/up.sh; read by hack/up.sh, hack/down.sh, hack/walkthrough.sh\n'
		printf 'KUBECONFIG=%q\n' "$KUBECONFIG"
		printf 'PATH=%q\n' "$PATH"
		printf 'TEAMSPACE_STATE=%q\n' "$state"
		printf 'TEAMSPACE_HOOK_PORT=%q\n' "$hook_port"
		printf 'TEAMSPACE_HOOK_URL=%q\n' "http://127.0.0.1:$hook_port"
		printf 'TEAMSPACE_ARCHIVE_DIR=%q\n' "$state/archive"
		printf 'TEAMSPACE_ENGINE_BIN=%q\n' "$engine_bin"
		printf 'TEAMSPACE_ENGINE_METRICS_PORT=%q\n' "$engine_metrics"
		printf 'TEAMSPACE_ENGINE_HEALTH_PORT=%q\n' "$engine_health"
		printf 'TEAMSPACE_ENGINE_EXTRA_ARGS=%q\n' "${METACONTROLLER_ARGS:-}"
		printf 'TEAMSPACE_HOOK_ARCHIVE_ARGS=%q\n' "${HOOK_ARCHIVE_ARGS:-}"
		printf 'TEAMSPACE_HA=%q\n' "$ha"
		printf 'TEAMSPACE_ENGINE_B_METRICS_PORT=%q\n' "$engine_b_metrics"
		printf 'TEAMSPACE_ENGINE_B_HEALTH_PORT=%q\n' "$engine_b_health"
	} >"$upenv.tmp"
	mv "$upenv.tmp" "$upenv"

	# The engine's CRDs must exist before it starts; crd.yaml before the controller.
	say "applying Metacontroller's CRDs ($engine_crds) and crd.yaml"
	kubectl apply -f "$engine_crds" >&2
	kubectl apply -f "$repo/crd.yaml" >&2
	# The platform as install.sh applies it (hack/deploy/kustomization.yaml),
	# and the limits ConfigMap (in teamspace-system) only when missing.
	platform_manifests kubectl | kubectl apply -f - >&2
	kubectl create namespace teamspace-system --dry-run=client -o yaml | kubectl apply -f - >&2
	ensure_limits_config kubectl
	kubectl wait --for=condition=Established --timeout=60s \
		crd/compositecontrollers.metacontroller.k8s.io \
		crd/decoratorcontrollers.metacontroller.k8s.io \
		crd/controllerrevisions.metacontroller.k8s.io \
		crd/teamspaces.platform.labhub.io >&2
	wait_teamspaces_admitted kubectl || die "TeamSpaces are not admitted; see the API server's log"

	say "building the hook (go build ./hook)"
	(cd "$repo" && go build -o "$updir/bin/teamspace-hook.new" ./hook)
	if pid_alive "$updir/run/hook.pid" && ! cmp -s "$updir/bin/teamspace-hook.new" "$updir/bin/teamspace-hook"; then
		say "hook binary changed: restarting the hook"
		load_upenv
		hook_stop
	fi
	mv "$updir/bin/teamspace-hook.new" "$updir/bin/teamspace-hook"
	hook_start
	engine_start

	compositecontroller_at "$TEAMSPACE_HOOK_URL" >"$updir/compositecontroller.yaml"
	if [[ -z $no_controller ]]; then
		say "applying compositecontroller.yaml (hooks at $TEAMSPACE_HOOK_URL)"
		apply_controller
	else
		say "not applying compositecontroller.yaml (--no-controller)"
	fi
	[[ -n $no_controller || -n $no_demo ]] || demo_up

	cat >&2 <<EOF

up.sh: TeamSpace is up. State: $state
  hook:           $TEAMSPACE_HOOK_URL (pid $(cat "$updir/run/hook.pid")), archive $TEAMSPACE_ARCHIVE_DIR
  Metacontroller: pid $(cat "$updir/run/metacontroller.pid"), health http://127.0.0.1:$TEAMSPACE_ENGINE_HEALTH_PORT/healthz
  logs:           $updir/logs/hook.log
                  $updir/logs/metacontroller.log
                  (control plane logs: see hack/cluster.sh, under $state)
  stop the engine only: hack/up.sh engine-stop / engine-start; everything: hack/down.sh
Run this (or: eval "\$(hack/up.sh env)"):
EOF
	print_env
}

cmd=${1:-up}
case $cmd in
up) shift $(($# > 0 ? 1 : 0)); up "$@" ;;
--no-controller | --no-demo | --ha) up "$@" ;;
env) cluster_env; print_env ;;
engine-stop) cluster_env; load_upenv; engine_stop "${2:-}" ;;
engine-start) cluster_env; engine_start "${2:-}" ;;
hook-stop) cluster_env; load_upenv; hook_stop "${2:-}" ;;
hook-start) cluster_env; hook_start "${2:-}" ;;
stop)
	# Tolerant: with no cluster state there is nothing of ours to stop.
	if "$cluster_sh" env >/dev/null 2>&1; then
		cluster_env
		# Every instance whose PID file is there, --ha or not.
		for f in metacontroller metacontroller-b hook hook-b; do
			[[ -f $updir/run/$f.pid ]] && stop_pid "$updir/run/$f.pid" "$f"
		done
		true
	else
		say "no cluster state (hack/cluster.sh env failed): nothing to stop"
	fi
	;;
apply-controller) cluster_env; apply_controller ;;
status)
	cluster_env
	for p in hook hook-b metacontroller metacontroller-b; do
		[[ $p != *-b || -f $updir/run/$p.pid ]] || continue
		if pid_alive "$updir/run/$p.pid"; then
			echo "$p: running (pid $(cat "$updir/run/$p.pid"))"
		else
			echo "$p: not running"
		fi
	done
	;;
-h | --help | help) usage ;;
*) die "unknown command $cmd (see --help)" ;;
esac
