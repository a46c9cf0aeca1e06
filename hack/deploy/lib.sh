# shellcheck shell=bash disable=SC2034 # (variables used by the scripts that source it)
# Shared by hack/deploy/install.sh, uninstall.sh, status.sh and
# hand-over-quotas.sh: the names of what an install makes, its settings and
# the SERVICE_MANAGER=none runner, and below them messages, ports,
# background processes and the platform's manifests. It stands on its own
# (a shipped installer sources nothing of the developers'); hack/lib.sh
# sources it. Source it; it runs nothing.

deploy_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$deploy_dir/../.." && pwd)

# The Metacontroller release the project runs and is tested with: the one
# place it is pinned (hack/deploy/install.sh's default CRDs, the test
# engine ensure_metacontroller builds, hack/bench.sh's machine.txt).
METACONTROLLER_VERSION="${METACONTROLLER_VERSION:-v4.17.2}"

# compositecontroller_at BASE_URL prints compositecontroller.yaml with its
# hook URLs at BASE_URL (e.g. http://127.0.0.1:8123) instead of the default
# http://127.0.0.1:8080: the one place a hook URL is rewritten (hack/up.sh,
# hack/deploy/install.sh and the tests call it).
compositecontroller_at() {
	sed -e "s#http://127\.0\.0\.1:8080/#${1%/}/#g" "${repo}/compositecontroller.yaml"
}

# ------------------------------------------------------------------ messages
# Every script here speaks the same way: "PROG: message" on stderr, one line
# per error ("PROG: error: ..."), so that a caller or a test can match it.
# A script sets prog before sourcing this file (default: its file name).

: "${prog:=$(basename "$0")}"

say() { printf '%s: %s\n' "${prog}" "$*" >&2; }
warn() { printf '%s: WARNING: %s\n' "${prog}" "$*" >&2; }
die() {
	printf '%s: error: %s\n' "${prog}" "$*" >&2
	exit 1
}

# usage prints the running script's header comment (line 2 up to `set -euo`).
usage() { sed -n '2,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; }

# other_arg ARG ends a script's argument loop: -h/--help prints the usage,
# anything else is refused in one line.
other_arg() {
	case $1 in
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument '$1' (see --help)" ;;
	esac
}

# no_args is the argument handling of a script that takes none: -h/--help
# prints the usage, anything else is refused in one line.
no_args() {
	(($# == 0)) || other_arg "$1"
	(($# <= 1)) || die "unknown argument '$2' (see --help)"
}

# one_line joins lines with ", ".
one_line() { paste -sd, - | sed 's/,/, /g'; }

# port_in_use HOST:PORT (or PORT, on 127.0.0.1): something accepts TCP
# connections there.
port_in_use() {
	local addr=$1
	[[ ${addr} == *:* ]] || addr=127.0.0.1:${addr}
	(exec 3<>"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null
}

# wait_http URL SECONDS [ALIVE_CMD...] waits until URL answers 2xx. Without
# an answer it returns 1 after SECONDS, or 2 as soon as ALIVE_CMD (when
# given: is the process that should answer still there?) fails. The caller
# says what went wrong, with its own hint (a log, a journal).
wait_http() {
	local url=$1 end=$((SECONDS + $2))
	shift 2
	command -v curl >/dev/null || die "curl not found: it is needed to check ${url}"
	while ((SECONDS < end)); do
		curl -fsS -o /dev/null --max-time 1 "${url}" 2>/dev/null && return 0
		if (($# > 0)) && ! "$@"; then
			return 2
		fi
		sleep 0.1
	done
	return 1
}

# metacontroller_bin_version BIN prints the version a Metacontroller binary
# was stamped with (-X main.version=..., as its release builds and
# ensure_metacontroller do; "v" added where a release left it out), or
# nothing when it was not. -trimpath keeps -ldflags out of the build info,
# so the binary is asked: it logs its version first, then stops at the
# kubeconfig it cannot read (nothing is served or contacted before that).
metacontroller_bin_version() {
	local v
	v=$(timeout 10 "$1" --kubeconfig=/nonexistent/teamspace-version-probe --metrics-address=0 \
		--health-probe-bind-address=0 --pprof-address=0 </dev/null 2>&1 |
		sed -n 's/.*"msg":"Configuration information".*"version":"\([^"]*\)".*/\1/p' | head -1) || true
	[[ -n "${v}" && "${v}" != "No version provided" ]] || return 0
	[[ "${v}" == v* ]] || v="v${v}"
	printf '%s\n' "${v}"
}

# refuse_changed_engine WHAT VERSION dies saying that WHAT, a build stamped
# VERSION (<tag>+<changes>, as ensure_proposed_engine stamps the engine with
# the patches proposed upstream), is not the stock engine that the suite and
# every install path run.
refuse_changed_engine() {
	die "$1 is Metacontroller $2, a build with changes (hack/bench/engine-patches are for hack/bench.sh only): the suite and every install path run the stock ${METACONTROLLER_VERSION}"
}

# ------------------------------------------------------ background processes
# One way, for every script here, to run a process in the background and
# stop it again by its pid file without ever signalling a stranger.

# pid_owned PIDFILE MARKER prints the pid recorded in PIDFILE if that process
# runs and its command line contains MARKER (a state directory, an install
# prefix), so that a recycled pid is never taken for ours.
pid_owned() {
	local pid cmdline
	pid="$(cat "$1" 2>/dev/null)" || return 1
	[[ "${pid}" =~ ^[0-9]+$ && -r "/proc/${pid}/cmdline" ]] || return 1
	# No pipe into grep -q here: under pipefail, grep quitting at the first
	# match can fail the pipeline with tr's SIGPIPE and lose a live process.
	cmdline="$(tr '\0' ' ' <"/proc/${pid}/cmdline" 2>/dev/null)" || return 1
	[[ "${cmdline}" == *"$2"* ]] || return 1
	printf '%s\n' "${pid}"
}

# start_bg PIDFILE LOG CMD... starts CMD in its own session, detached from
# this shell, appending to LOG, and records its pid.
start_bg() {
	local pidfile="$1" logfile="$2"
	shift 2
	printf '\n=== %s: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"${logfile}"
	setsid "$@" </dev/null >>"${logfile}" 2>&1 &
	printf '%s\n' "$!" >"${pidfile}"
}

# stop_owned PIDFILE MARKER WHAT TIMEOUT_S sends SIGTERM to the process of
# pid_owned, SIGKILL if it is still there after TIMEOUT_S seconds, and
# removes PIDFILE.
stop_owned() {
	local pidfile="$1" marker="$2" what="$3" timeout="$4" pid i
	if pid="$(pid_owned "${pidfile}" "${marker}")"; then
		say "stopping ${what} (pid ${pid})"
		kill -TERM "${pid}" 2>/dev/null || true
		for ((i = 0; i < timeout * 10; i++)); do
			pid_owned "${pidfile}" "${marker}" >/dev/null || break
			sleep 0.1
		done
		if pid_owned "${pidfile}" "${marker}" >/dev/null; then
			say "${what} (pid ${pid}) did not stop in ${timeout}s; killing it"
			kill -KILL "${pid}" 2>/dev/null || true
			sleep 0.2
		fi
		# An orphan's exit is reaped by PID 1, which on some hosts takes a
		# moment: wait (briefly) until the pid is gone from the process table.
		for ((i = 0; i < 50; i++)); do
			[[ "$(awk '{print $3}' "/proc/${pid}/stat" 2>/dev/null)" == Z ]] || break
			sleep 0.1
		done
	fi
	rm -f "${pidfile}"
}

# ensure_limits_config KUBECTL...: creates ConfigMap
# teamspace-system/teamspace-limits from hack/deploy/limits-config.yaml when
# it is missing and keeps one that exists: it holds the platform team's
# limits, and an upgrade must not reset them. Its namespace must exist. It
# says in one line (with the caller's say) which it did. Used by
# hack/deploy/install.sh and hack/up.sh.
ensure_limits_config() {
	local ns=teamspace-system cm=teamspace-limits kept
	# shellcheck disable=SC2016 # a go-template, not shell
	if kept=$("$@" -n "$ns" get configmap "$cm" -o go-template='{{range $k, $v := .data}}{{$k}}="{{$v}}" {{end}}' 2>/dev/null); then
		say "platform limits: ConfigMap $ns/$cm exists, kept as it is: $kept"
	else
		"$@" create -f "${repo}/hack/deploy/limits-config.yaml" >&2
		say "platform limits: created ConfigMap $ns/$cm with the shipped defaults (change them: kubectl -n $ns edit configmap $cm)"
	fi
}

# platform_manifests KUBECTL...: prints the platform, hack/deploy's
# kustomization (the roles, the guard rails, every admission policy: listed
# there once), rendered by KUBECTL kustomize, as this API server can take
# it: where it serves no MutatingAdmissionPolicy v1 (Kubernetes < 1.36)
# without requested-by.yaml's policies (new TeamSpaces are then not stamped
# with who asked), saying so in one line. hack/deploy/install.sh and
# hack/up.sh apply exactly this, hack/deploy/uninstall.sh deletes it.
platform_manifests() {
	if "$@" get --raw /apis/admissionregistration.k8s.io/v1 2>/dev/null | grep -q '"name":"mutatingadmissionpolicies"'; then
		"$@" kustomize "${repo}/hack/deploy"
	else
		say "requested-by: this API server has no MutatingAdmissionPolicy v1 (Kubernetes < 1.36): new TeamSpaces are not stamped with who asked (the limits still refuse a forged one) and get the engine's finalizer only on its first sync, a TeamSpace's node selector is not filled into its pods (pods that leave it out are refused), and claims that name no class get the cluster's default, not defaultStorageClass"
		"$@" kustomize "${repo}/hack/deploy" | without_kinds 'MutatingAdmissionPolicy|MutatingAdmissionPolicyBinding'
	fi
}

# without_kinds REGEX copies a YAML stream as kustomize writes it (documents
# separated by "---", "kind:" at the start of a line), leaving out the
# documents whose kind matches REGEX entirely.
without_kinds() {
	awk -v re="^kind: (${1})\$" '
		function flush() {
			if (doc != "" && !drop) printf "%s---\n", doc
			doc = ""
			drop = 0
		}
		/^---$/ { flush(); next }
		{ doc = doc $0 "\n"; if ($0 ~ re) drop = 1 }
		END { flush() }'
}

# wait_teamspaces_admitted KUBECTL...: waits (60 s at most) until the API
# server admits a TeamSpace as it will admit the users' own, asked by a
# server-side dry run. Two things lag behind the objects install.sh and up.sh
# apply: a policy takes effect once the API server's informers have it, and
# a MutatingAdmissionPolicy on a new CRD knows its schema once the API
# server has read it back from its own OpenAPI (every 5 s). Until then a
# create is either not stamped with who asked or refused with 503 "Resource
# kind ... not found", which a first TeamSpace right after up.sh met in CI.
# So the probe must come back stamped (where requested-by.yaml is applied).
# A refusal of another kind is an answer of the admission chain (the probe's
# name taken, say): it ends the wait too. Used by hack/deploy/install.sh and
# hack/up.sh.
wait_teamspaces_admitted() {
	local out first="" i probe stamped=""
	probe=$'apiVersion: platform.labhub.io/v1alpha1\nkind: TeamSpace\nmetadata:\n  name: teamspace-admission-probe\nspec:\n  pods: 1\n'
	if "$@" get mutatingadmissionpolicies.admissionregistration.k8s.io teamspace-requested-by >/dev/null 2>&1; then
		stamped=yes
	fi
	for ((i = 0; i < 60; i++)); do
		if out=$(printf '%s' "$probe" | "$@" create --dry-run=server -o 'jsonpath={.metadata.annotations.platform\.labhub\.io/requested-by}' -f - 2>&1); then
			if [[ -z $stamped || -n $out ]]; then
				((i == 0)) || say "TeamSpaces are admitted after ${i} s (before: ${first//$'\n'/ })"
				return 0
			fi
			out="admitted but not stamped with who asked: the MutatingAdmissionPolicy teamspace-requested-by is not in effect yet"
		else
			case $out in
			*"There can be a delay"* | *ServiceUnavailable* | *"no matches for kind"* | *"could not find the requested resource"*) ;;
			*)
				say "TeamSpaces are admitted (a dry-run probe was refused on its own terms: ${out//$'\n'/ })"
				return 0
				;;
			esac
		fi
		[[ -n $first ]] || first=$out
		sleep 1
	done
	say "the API server does not admit TeamSpaces yet after 60 s: ${out//$'\n'/ }"
	return 1
}

# unowned_team_namespaces KUBECTL...: prints, one a line, the namespaces
# named team-* that no TeamSpace owns (no ownerReference of kind TeamSpace):
# made by hand, or left from an old install. The TeamSpace of that name, if
# any, says NamespaceConflict; hack/deploy/namespaces.yaml keeps new ones from
# appearing. Used by hack/deploy/install.sh and hack/deploy/status.sh.
unowned_team_namespaces() {
	# shellcheck disable=SC2016 # a go-template, not shell
	"$@" get namespaces -o go-template='{{range .items}}{{$n := .metadata.name}}{{if and (gt (len $n) 5) (eq (slice $n 0 5) "team-")}}{{$owned := false}}{{range .metadata.ownerReferences}}{{if eq .kind "TeamSpace"}}{{$owned = true}}{{end}}{{end}}{{if not $owned}}{{$n}}{{"\n"}}{{end}}{{end}}{{end}}'
}

# The namespace and ServiceAccount of the engine's credential (rbac.yaml).
TS_NAMESPACE=teamspace-system
TS_SERVICE_ACCOUNT=metacontroller
TS_TOKEN_SECRET=metacontroller-token
TS_UNITS=(teamspace-hook metacontroller)
TS_COMPOSITECONTROLLER=teamspace
TS_CRD=teamspaces.platform.labhub.io
# The CRD annotation guardrails.yaml wants before the CRD may be deleted.
TS_ALLOW_DELETE=platform.labhub.io/allow-delete

# load_settings reads the settings both scripts share from the environment
# (the flags of the scripts set the same variables first).
load_settings() {
	SERVICE_MANAGER=${SERVICE_MANAGER:-systemd}
	DESTDIR=${DESTDIR:-}
	PREFIX=${PREFIX:-/usr/local}
	KUBECTL=${KUBECTL:-kubectl}
	case $SERVICE_MANAGER in
	systemd | none) ;;
	*) die "SERVICE_MANAGER must be systemd or none, not '$SERVICE_MANAGER'" ;;
	esac
	local v
	for v in "$DESTDIR" "$PREFIX"; do
		[[ $v =~ ^[A-Za-z0-9_./+-]*$ ]] || die "DESTDIR/PREFIX may only contain letters, digits and _ . / + - ('$v')"
	done
	[[ $PREFIX == /* ]] || die "PREFIX must be an absolute path ('$PREFIX')"
	if [[ -n $DESTDIR ]]; then
		[[ $DESTDIR == /* ]] || die "DESTDIR must be an absolute path ('$DESTDIR')"
		[[ $SERVICE_MANAGER == none ]] || die "DESTDIR is for test installs and needs SERVICE_MANAGER=none (systemd would not see units under $DESTDIR)"
	fi
	# Where things live. Unlike the GNU convention, the files installed under
	# DESTDIR refer to each other with the DESTDIR paths, so that a DESTDIR
	# install actually runs (SERVICE_MANAGER=none).
	bindir=$DESTDIR$PREFIX/bin
	confdir=$DESTDIR/etc/teamspace
	statedir=$DESTDIR/var/lib/teamspace
	unitdir=$DESTDIR/etc/systemd/system
	rundir=$DESTDIR/run/teamspace
	logdir=$DESTDIR/var/log/teamspace
	engine_kubeconfig=$confdir/metacontroller.kubeconfig
}

# kc runs kubectl with the installer's (admin) credential: $KUBECONFIG, or
# k3s's admin kubeconfig when KUBECONFIG is unset.
kc() { "$KUBECTL" "$@"; }

default_kubeconfig() {
	if [[ -z ${KUBECONFIG:-} ]]; then
		if [[ -r /etc/rancher/k3s/k3s.yaml ]]; then
			export KUBECONFIG=/etc/rancher/k3s/k3s.yaml
		else
			die "KUBECONFIG is not set and /etc/rancher/k3s/k3s.yaml is not readable: point KUBECONFIG at a cluster-admin kubeconfig"
		fi
	fi
}

# --- SERVICE_MANAGER=none: the unit's own command line, without systemd ----

# unit_command NAME prints, NUL-separated, the environment assignments of the
# installed unit NAME.service (Environment= lines), a lone "--", then its
# ExecStart= words after expanding what systemd would expand there: $VAR
# (split into words), ${VAR} (one word), %d (the credentials directory,
# emulated under $rundir/credentials/NAME) and %%. Units are kept simple
# enough for this: one ExecStart=, no quotes in it, no other specifiers.
unit_command() {
	local name=$1 file=$unitdir/$1.service line exec="" cont="" key value word out w
	local -A env=()
	local -a order=() argv=()
	[[ -r $file ]] || die "$file not found (run install.sh first)"
	while IFS= read -r line || [[ -n $line ]]; do
		if [[ -n $cont ]]; then
			line="$cont ${line#"${line%%[![:space:]]*}"}"
			cont=""
		fi
		if [[ $line == *\\ ]]; then
			cont=${line%\\}
			continue
		fi
		case $line in
		Environment=*)
			value=${line#Environment=}
			if [[ $value == \"*\" ]]; then
				value=${value#\"}
				value=${value%\"}
			fi
			key=${value%%=*}
			[[ $value == *=* && $key =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "$file: cannot parse: $line"
			[[ -v "env[$key]" ]] || order+=("$key")
			env[$key]=${value#*=}
			;;
		ExecStart=*)
			[[ -z $exec ]] || die "$file: more than one ExecStart="
			exec=${line#ExecStart=}
			;;
		esac
	done <"$file"
	[[ -n $exec ]] || die "$file: no ExecStart="
	[[ $exec != *[\"\']* ]] || die "$file: quotes in ExecStart= are not supported by SERVICE_MANAGER=none"
	read -r -a argv <<<"$exec"
	for key in "${order[@]}"; do
		printf '%s=%s\0' "$key" "${env[$key]}"
	done
	printf -- '--\0'
	for word in "${argv[@]}"; do
		if [[ $word =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			key=${BASH_REMATCH[1]}
			read -r -a out <<<"${env[$key]:-}"
			for w in "${out[@]}"; do printf '%s\0' "$w"; done
			continue
		fi
		while [[ $word =~ \$\{([A-Za-z_][A-Za-z0-9_]*)\} ]]; do
			key=${BASH_REMATCH[1]}
			word=${word//"\${$key}"/"${env[$key]:-}"}
		done
		word=${word//%d/$rundir/credentials/$name}
		word=${word//%%/%}
		[[ $word != *%* && $word != *\$* ]] || die "$file: unsupported specifier or variable in '$word'"
		printf '%s\0' "$word"
	done
}

# unit_credentials NAME copies the files of the unit's LoadCredential=ID:PATH
# lines to $rundir/credentials/NAME/ID (what systemd does, root-only).
unit_credentials() {
	local name=$1 line spec dir=$rundir/credentials/$1
	mkdir -p "$dir"
	chmod 0700 "$dir"
	while IFS= read -r line; do
		[[ $line == LoadCredential=* ]] || continue
		spec=${line#LoadCredential=}
		[[ -r ${spec#*:} ]] || die "credential ${spec#*:} of $name.service is missing"
		install -m 0600 "${spec#*:}" "$dir/${spec%%:*}"
	done <"$unitdir/$name.service"
}

# none_stop NAME stops the process started by none_start (SIGTERM, as
# KillSignal= says; SIGKILL after 30 s).
none_stop() {
	stop_owned "$rundir/$1.pid" "$bindir/" "$1" 30
}

# none_start NAME (re)starts the unit's ExecStart= in the background, with
# its Environment=, a pid file under $rundir and a log under $logdir.
none_start() {
	local name=$1 item seen_sep=""
	local -a envs=() argv=()
	none_stop "$name"
	unit_credentials "$name"
	while IFS= read -r -d '' item; do
		if [[ -z $seen_sep ]]; then
			if [[ $item == -- ]]; then seen_sep=1; else envs+=("$item"); fi
		else
			argv+=("$item")
		fi
	done < <(unit_command "$name")
	((${#argv[@]} > 0)) || die "cannot read the command line of $name.service"
	mkdir -p "$rundir" "$logdir"
	say "starting $name: ${argv[*]} (log: $logdir/$name.log)"
	start_bg "$rundir/$name.pid" "$logdir/$name.log" env "${envs[@]}" "${argv[@]}"
}

# TS_QUOTAS_CONTROLLER is the DecoratorController of the team namespaces'
# quotas (compositecontroller.yaml).
TS_QUOTAS_CONTROLLER=teamspace-quotas
# TS_TEMPLATES_CONTROLLER is the DecoratorController of the templates'
# bundle (compositecontroller.yaml); its Secret goes with the
# CompositeController, its owner.
TS_TEMPLATES_CONTROLLER=teamspace-templates
# TS_ADOPTED_CONTROLLER is the DecoratorController of adopted namespaces'
# labels (compositecontroller.yaml).
TS_ADOPTED_CONTROLLER=teamspace-adopted

# hand_over_quotas KUBECTL...: hands every quota made before the
# DecoratorController teamspace-quotas had the LimitRange as its parent
# over to it: by the CompositeController (the quotas its children, before
# issue #54) or by the DecoratorController of the namespace (issue #54,
# before #55). team-quota and team-objects of a team namespace whose
# controller is a TeamSpace or the Namespace get the namespace's LimitRange
# team-defaults as controller and the DecoratorController's mark
# (annotation metacontroller.k8s.io/decorator-controller), nothing else;
# their limits stay, and no quota is ever missing. The DecoratorController
# never adopts a quota without both: it would leave it alone. A namespace
# whose LimitRange is not there yet is left for the next run (the engine
# makes it). Idempotent; a quota already handed over, or not a
# TeamSpace's, is left as it is. It prints how many it handed over.
hand_over_quotas() {
	local list ns name kind uid n=0
	local -A limitrange=()
	# Every team namespace's LimitRange, in one list: its uid by namespace.
	list=$("$@" get limitrange --all-namespaces -l platform.labhub.io/teamspace --field-selector metadata.name=team-defaults \
		-o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.uid}{"\n"}{end}') ||
		die "cannot list the team namespaces' LimitRanges"
	while read -r ns uid; do
		[[ -z $ns ]] || limitrange[$ns]=$uid
	done <<<"$list"
	list=$("$@" get resourcequota --all-namespaces -l platform.labhub.io/teamspace \
		-o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{" "}{.metadata.ownerReferences[?(@.controller==true)].kind}{"\n"}{end}') ||
		die "cannot list the team namespaces' quotas"
	while read -r ns name kind; do
		[[ ($kind == TeamSpace || $kind == Namespace) && ($name == team-quota || $name == team-objects) ]] || continue
		uid=${limitrange[$ns]:-}
		[[ -n $uid ]] || continue
		"$@" patch resourcequota "$name" -n "$ns" --type=json -p "[
			{\"op\":\"replace\",\"path\":\"/metadata/ownerReferences\",\"value\":[{\"apiVersion\":\"v1\",\"kind\":\"LimitRange\",\"name\":\"team-defaults\",\"uid\":\"$uid\",\"controller\":true,\"blockOwnerDeletion\":true}]},
			{\"op\":\"add\",\"path\":\"/metadata/annotations/metacontroller.k8s.io~1decorator-controller\",\"value\":\"$TS_QUOTAS_CONTROLLER\"}]" >/dev/null ||
			die "cannot hand quota $ns/$name over to DecoratorController $TS_QUOTAS_CONTROLLER"
		n=$((n + 1))
	done <<<"$list"
	echo "$n"
}
