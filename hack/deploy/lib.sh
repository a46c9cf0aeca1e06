# shellcheck shell=bash disable=SC2034 # (variables used by the scripts that source it)
# Shared by hack/deploy/install.sh, uninstall.sh and status.sh: the names of
# what an install makes, its settings and the SERVICE_MANAGER=none runner, on
# top of hack/lib.sh (messages, ports, background processes). Source it; it
# runs nothing.

deploy_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$deploy_dir/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../lib.sh
source "$deploy_dir/../lib.sh"

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
