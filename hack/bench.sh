#!/usr/bin/env bash
# hack/bench.sh: every figure of BENCHMARKS.md, reproduced.
#
#   hack/bench.sh [all|machine|micro|http|e2e|fleet|failover|faults] ...
#                (default: all: machine, micro, http, e2e, in that order)
#
#   machine  nproc, CPU, kernel, Go, Kubernetes and engine versions
#   micro    go test -bench Hooks -benchmem -count 6 on the recorded engine
#            requests, summarised with benchstat
#   http     the hook and hack/bench/bare (the same answer bytes from a
#            minimal net/http server) under wrk on loopback, alternating
#            bare, hook, bare, hook... in one run; medians, ratio, VmHWM/VmRSS
#   e2e      with the real engine (hack/up.sh in a private state directory):
#            hack/bench/drift (every child) for every engine configuration
#            of ENGINE_CONFIGS, then hack/bench/fleet at 200 TeamSpaces
#            (create, steady, catchup) for every configuration of
#            SCALE_ENGINE_CONFIGS; hack/down.sh at the end
#   fleet    with the real engine, for every configuration of FLEET_CONFIGS
#            and every count of FLEET_COUNTS, on a fresh private setup each:
#            hack/bench/fleet (an empty window, API server floor, create-to-Ready, steady
#            state, drift under pod churn, the re-sync of all after an engine
#            restart, and with catchup in FLEET_PHASES the catch-up after a
#            60 s outage; requests by verb, CPU, RSS, CPU profiles of the
#            engine and the API server); ~13 min per 1000
#   failover two engines with --leader-election on one private setup: drift
#            repair with the leader up, then with the leader killed (-9, and
#            SIGTERM) just before the break: the standby's takeover time
#   faults   the fault run of issue #67 at scale (tests/e2e TestFaultRun on
#            its own setup: hack/up.sh --ha, the archive in an S3 bucket, the
#            control plane restarted as systemd would): FAULT_RUN_COUNT
#            TeamSpaces, FAULT_RUN_FOR of seeded random kills and
#            impairments under a workload of FAULT_RUN_OPS operations/s; the
#            invariants fail the run; its RESULT line, history and
#            operations in the results directory; ~35 min at 1000 and 20m;
#            FAULT_RUN_KUBE=proposed runs kube-controller-manager with the
#            changes to Kubernetes proposed upstream
#            (hack/bench/kubernetes-patches, hack/lib.sh ensure_proposed_kube)
#
# fleet and failover run every engine of BENCH_ENGINES, e2e the first: "stock"
# is the pinned Metacontroller, as the suite and every install path run it;
# "proposed" is the same source with the changes proposed upstream
# (hack/bench/engine-patches, built by hack/lib.sh ensure_proposed_engine
# before anything runs: a patch that does not apply ends the run naming it).
# With both, each count runs stock and proposed in turn, the order reversed
# every other round.
#
# Environment (defaults in brackets):
#   BENCH_OUT            results directory [bench-results/<UTC time>]
#   HTTP_BODY            recorded request POSTed by wrk [tests/testdata/sync/recorded-steady/request.json]
#   HTTP_CONNS           wrk connection counts [64 8]
#   HTTP_ROUNDS          rounds of (bare, hook) per connection count [5]
#   HTTP_DURATION        length of one wrk run [10s]
#   BENCH_EXTRA_HOOKS    more hook binaries to alternate with, "label=/path ..." (prototypes)
#   METACONTROLLER_BIN   the stock engine (as for hack/up.sh) [metacontroller on PATH,
#                        else built from its source: hack/lib.sh ensure_metacontroller]
#   BENCH_ENGINES        engines compared, in the first round's order [stock]; e.g. "stock proposed";
#                        proposed:0001,0003 is the stock source with those patches alone
#   BENCH_ROUNDS         rounds over BENCH_ENGINES in fleet and failover [1]
#   ENGINE_PATCHES       the proposed engine's patches [hack/bench/engine-patches]
#   PROPOSED_ENGINE_FLAGS  more flags for the proposed engine only (e.g. its
#                        --leader-election-lease-duration) []
#   ENGINE_CONFIGS       ";"-separated "label=engine flags" for drift
#                        [see ENGINE_CONFIGS_DEFAULT below]
#   SCALE_ENGINE_CONFIGS the same for that fleet run, each on a fresh setup
#                        [qps50 (the earlier flags) and shipped (engine_tuning_flags: the systemd unit's)]
#   DRIFT_REPS           repetitions of restore and of revert [20]
#   DRIFT_CHILDREN       children drift breaks [quota,limitrange,rolebinding,networkpolicy]
#   SCALE_COUNT          TeamSpaces of e2e's fleet run [200]
#   SCALE_STEADY         steady-state window [60s]
#   SCALE_DOWN           how long the engine is stopped in catchup [60s]
#   BENCH_STATE          TEAMSPACE_STATE of the private setup [/tmp/teamspace-bench]
#   HOOK_PORT            hook port of that setup [18380]
#   BENCH_ENGINE_METRICS_PORT, BENCH_ENGINE_HEALTH_PORT  engine ports [28999, 28081]
#   BENCH_KEEP_SETUP=1   leave the setup running at the end
#   FAULT_RUN_COUNT, FAULT_RUN_FOR, FAULT_RUN_SEED, FAULT_RUN_OPS
#                        the fault run's TeamSpaces, length, seed and
#                        operations per second [1000, 20m, 67, 2]
#   FLEET_CONFIGS        ";"-separated "label=engine flags [cc:ignoreStatusChanges=B]
#                        [cc:resyncPeriodSeconds=N] [cc:customize=off]
#                        [cc:quotas=children: the quotas as the CompositeController's
#                        children, no DecoratorController, as before issue #54]
#                        [admission:-NAME: MutatingAdmissionPolicy NAME and its binding
#                        deleted after setup, e.g. admission:-teamspace-finalizer]
#                        [fleet:-per-requester=N]" (fleet: a flag of hack/bench/fleet; cc: the
#                        CompositeController, patched after start; a period
#                        works only below the engine's --cache-flush-interval,
#                        which the shipped flags set to 0) [shipped]
#   FLEET_COUNTS         TeamSpace counts [100 1000 2000]
#   FLEET_PHASES, FLEET_CHURN, FLEET_WINDOW, FLEET_COST_WINDOW, FLEET_STEADY
#                        hack/bench/fleet's -phases, -churn, -window, -cost-window,
#                        -steady [all; 0,10,50,100; 60s]
#   FLEET_PROFILE_MIN    profile only runs of at least this many TeamSpaces [1000]
#   TEAMSPACE_APISERVER_AUDIT=1  kube-apiserver keeps an audit log (tests/controlplane
#                        AuditEnv): fleet's floor, create and quiet then print every
#                        client's requests by verb and resource per TeamSpace (RESULT
#                        fleet requests); a write per request, so time the runs without it
#   BENCH_ENGINE_PPROF_PORT  the engine's --pprof-address port [28060]
#
# Every loop is bounded; wrk is installed with apt-get when missing.
set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
hack=$repo/hack
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$hack/lib.sh"

BENCHSTAT=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

# Every step named is known before anything is made (--help makes nothing).
for s in "$@"; do
	case $s in
	all | machine | micro | http | e2e | fleet | failover | faults) ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown step $s (see --help)" ;;
	esac
done

out=${BENCH_OUT:-$repo/bench-results/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$out/bin
mkdir -p "$bin"


# ------------------------------------------------------------------ machine

machine() {
	local f=$out/machine.txt engine=${METACONTROLLER_BIN:-$(command -v metacontroller || true)}
	{
		echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
		echo "nproc: $(nproc)"
		echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
		echo "memory: $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"
		echo "kernel: $(uname -r)"
		echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
		echo "go: $(go version)"
		echo "kubernetes: $KUBE_VERSION (hack/lib.sh; binaries in $KUBE_BIN_DIR)"
		if ((${#engine_bins[@]})); then
			local e
			for e in "${bench_engines[@]}"; do
				engine_line "engine $e" "${engine_bins[$e]}"
			done
		elif [[ -n $engine && -x $engine ]]; then
			engine_line engine "$engine"
		else
			echo "engine: none (METACONTROLLER_BIN unset)"
		fi
		echo "wrk: $(wrk --version 2>&1 | head -1 || true)"
		echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
	} | tee "$f" >&2
}

# engine_line LABEL BIN: the engine's path, the version it logs and its Go.
engine_line() {
	echo "$1: $2, version $(metacontroller_bin_version "$2" || true) (pinned: $METACONTROLLER_VERSION), $(go version "$2" 2>/dev/null | cut -d' ' -f2-)"
}

# -------------------------------------------------------------------- micro

micro() {
	say "micro: go test ./hook/server -run '^\$' -bench Hooks -benchmem -count 6"
	(cd "$repo" && go test ./hook/server -run '^$' -bench Hooks -benchmem -count 6) | tee "$out/micro.txt" >&2
	(cd "$repo" && go test ./hook/server -run '^$' -bench 'Hooks/sync/steady' -benchtime 3s \
		-cpuprofile "$out/micro-cpu.pprof" -o "$bin/server.test") >/dev/null
	go tool pprof -top -cum -nodecount 40 "$bin/server.test" "$out/micro-cpu.pprof" >"$out/micro-cpu-top.txt" 2>/dev/null || true
	if (cd "$hack" && go run "$BENCHSTAT" "$out/micro.txt") >"$out/micro-benchstat.txt" 2>"$out/micro-benchstat.err"; then
		cat "$out/micro-benchstat.txt" >&2
	else
		say "benchstat failed (see $out/micro-benchstat.err); raw figures are in $out/micro.txt"
	fi
}

# --------------------------------------------------------------------- http

declare -a started_pids=()

# start_server NAME CMD...: starts CMD pinned to CPU 0, records its pid.
start_server() {
	local name=$1
	shift
	taskset -c 0 "$@" >"$out/http-$name.log" 2>&1 &
	started_pids+=("$!")
	printf '%s\n' "$!" >"$out/http-$name.pid"
}

stop_servers() {
	local p
	for p in "${started_pids[@]}"; do
		kill "$p" 2>/dev/null || true
	done
	for p in "${started_pids[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	started_pids=()
}

# wait_port PORT: the server there answers /healthz (bare answers every
# path) within 10 s.
wait_port() { wait_http "http://127.0.0.1:$1/healthz" 10 || die "nothing answers on 127.0.0.1:$1"; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

http() {
	command -v wrk >/dev/null || apt_install wrk
	command -v taskset >/dev/null || die "taskset not found (util-linux)"
	local body=${HTTP_BODY:-$repo/tests/testdata/sync/recorded-steady/request.json}
	local rounds=${HTTP_ROUNDS:-5} dur=${HTTP_DURATION:-10s} conns
	read -r -a conns <<<"${HTTP_CONNS:-64 8}"
	say "http: building the hook and hack/bench/bare"
	(cd "$repo" && go build -o "$bin/teamspace-hook" ./hook)
	(cd "$hack" && go build -o "$bin/bare" ./bench/bare)

	# label=port=binary for every hook variant
	local -a variants=("hook=18391=$bin/teamspace-hook")
	local v port=18392
	for v in ${BENCH_EXTRA_HOOKS:-}; do
		variants+=("${v%%=*}=$port=${v#*=}")
		port=$((port + 1))
	done
	trap stop_servers EXIT
	local label path
	for v in "${variants[@]}"; do
		IFS='=' read -r label port path <<<"$v"
		mkdir -p "$out/http-archive-$label"
		start_server "$label" "$path" --listen-address="127.0.0.1:$port" --archive-dir="$out/http-archive-$label" --log-level=info
		wait_port "$port"
	done
	# bare answers what the hook answers to this request
	curl -fsS --data-binary "@$body" -H 'Content-Type: application/json' -o "$out/http-answer.json" "http://127.0.0.1:18391/sync"
	start_server bare "$bin/bare" -listen 127.0.0.1:18390 -response "$out/http-answer.json"
	wait_port 18390
	for v in "${variants[@]}"; do
		IFS='=' read -r label port path <<<"$v"
		curl -fsS --data-binary "@$body" -H 'Content-Type: application/json' "http://127.0.0.1:$port/sync" | cmp -s - "$out/http-answer.json" ||
			die "$label answers other bytes than the hook"
	done

	local raw=$out/http-raw.txt c r
	: >"$raw"
	for c in "${conns[@]}"; do
		for ((r = 1; r <= rounds; r++)); do
			for v in "bare=18390=" "${variants[@]}"; do
				IFS='=' read -r label port path <<<"$v"
				say "http: c=$c round $r/$rounds $label"
				BODY_FILE=$body taskset -c 1 wrk -t1 -c"$c" -d"$dur" -s "$hack/bench/wrk/post.lua" "http://127.0.0.1:$port/sync" |
					grep '^RESULT' | sed "s/^RESULT/RESULT server=$label conns=$c round=$r/" | tee -a "$raw" >&2
			done
		done
	done
	{
		printf 'HTTP: wrk -t1 -c<conns> -d%s (pinned to CPU 1), servers pinned to CPU 0, body %s, %s rounds alternating\n' "$dur" "${body#"$repo"/}" "$rounds"
		printf '%-10s %6s %10s %10s %10s %10s %8s\n' server conns rps_med p50_ms p99_ms ratio errors
		for c in "${conns[@]}"; do
			local bare_rps
			bare_rps=$(grep "server=bare conns=$c " "$raw" | sed -E 's/.* rps=([0-9.]+).*/\1/' | median)
			for v in "bare=18390=" "${variants[@]}"; do
				IFS='=' read -r label port path <<<"$v"
				local sel rps p50 p99 errs
				sel=$(grep "server=$label conns=$c " "$raw")
				rps=$(sed -E 's/.* rps=([0-9.]+).*/\1/' <<<"$sel" | median)
				p50=$(sed -E 's/.* p50_us=([0-9]+).*/\1/' <<<"$sel" | median)
				p99=$(sed -E 's/.* p99_us=([0-9]+).*/\1/' <<<"$sel" | median)
				errs=$(sed -E 's/.* errors=([0-9]+) non2xx=([0-9]+).*/\1 \2/' <<<"$sel" | awk '{s+=$1+$2} END {print s+0}')
				printf '%-10s %6s %10.0f %10.3f %10.3f %10.2f %8s\n' "$label" "$c" "$rps" "$(awk -v x="$p50" 'BEGIN{print x/1000}')" "$(awk -v x="$p99" 'BEGIN{print x/1000}')" "$(awk -v a="$rps" -v b="$bare_rps" 'BEGIN{print a/b}')" "$errs"
			done
		done
		echo "memory after all runs (/proc/<pid>/status):"
		for v in "${variants[@]}" "bare=18390="; do
			IFS='=' read -r label port path <<<"$v"
			printf '  %-10s %s\n' "$label" "$(grep -E 'VmHWM|VmRSS' "/proc/$(cat "$out/http-$label.pid")/status" | tr -s ' \t' ' ' | paste -sd' ')"
		done
	} | tee "$out/http.txt" >&2
	stop_servers
	trap - EXIT
}

# ------------------------------------------------------------------ engines

declare -A engine_bins=()
declare -a bench_engines=()

# resolve_engines finds or builds every engine of BENCH_ENGINES once, before
# any measurement (the main loop calls it for the steps that run one).
resolve_engines() {
	((${#engine_bins[@]} == 0)) || return 0
	local e only
	read -r -a bench_engines <<<"${BENCH_ENGINES:-stock}"
	((${#bench_engines[@]})) || die "BENCH_ENGINES is empty"
	for e in "${bench_engines[@]}"; do
		case $e in
		stock)
			require_metacontroller "hack/bench.sh"
			engine_bins[stock]=$METACONTROLLER_BIN
			;;
		proposed | proposed:*)
			only=${e#proposed}
			only=${only#:}
			ENGINE_PATCHES_ONLY=${only:-${ENGINE_PATCHES_ONLY:-}} ensure_proposed_engine
			engine_bins[$e]=$PROPOSED_METACONTROLLER_BIN
			;;
		*) die "BENCH_ENGINES: unknown engine $e (want stock, proposed or proposed:<patch numbers>)" ;;
		esac
	done
	# hack/up.sh runs METACONTROLLER_BIN: e2e runs the first engine
	use_engine "${bench_engines[0]}"
}

# use_engine NAME: hack/up.sh and failover start this engine from now on.
use_engine() {
	export METACONTROLLER_BIN=${engine_bins[$1]}
	if [[ $1 == proposed* ]]; then
		export TEAMSPACE_PROPOSED_ENGINE_OK=1
	else
		unset TEAMSPACE_PROPOSED_ENGINE_OK
	fi
}

# engine_flags NAME: the flags only that engine gets.
engine_flags() {
	[[ $1 == proposed* ]] && printf '%s' "${PROPOSED_ENGINE_FLAGS:-}"
	return 0
}

# engine_runs prints "round engine" for every run: BENCH_ROUNDS rounds over
# BENCH_ENGINES, every other one in reverse order.
engine_runs() {
	local r i n=${#bench_engines[@]}
	for ((r = 1; r <= ${BENCH_ROUNDS:-1}; r++)); do
		for ((i = 0; i < n; i++)); do
			if ((r % 2)); then
				echo "$r ${bench_engines[i]}"
			else
				echo "$r ${bench_engines[n - 1 - i]}"
			fi
		done
	done
}

# run_label LABEL ROUND ENGINE: LABEL, with the engine and round when the
# bench compares several.
run_label() {
	local l=$1
	((${#bench_engines[@]} > 1)) && l+="-${3//[:,]/-}"
	((${BENCH_ROUNDS:-1} > 1)) && l+="-r$2"
	printf '%s' "$l"
}

# ---------------------------------------------------------------------- e2e

# The engine flags compared; hack/up.sh always passes the shipped ones
# (engine_tuning_flags, from the systemd unit) first, and later flags win.
# Windows at rest and under churn are fixed lengths: since resyncs come
# every 6-12 h per TeamSpace (hook/teamspace/resync.go), no window spans a
# resync period, and the cost at rest is what a window without one shows.

ENGINE_CONFIGS_DEFAULT="qps5-default=--client-go-qps=5 --client-go-burst=10"
ENGINE_CONFIGS_DEFAULT+=";qps50=--client-go-qps=50 --client-go-burst=100"
ENGINE_CONFIGS_DEFAULT+=";qps50-ssa=--client-go-qps=50 --client-go-burst=100 --apply-strategy=server-side-apply"
ENGINE_CONFIGS_DEFAULT+=";qps50-w10=--client-go-qps=50 --client-go-burst=100 --workers=10"
ENGINE_CONFIGS_DEFAULT+=";shipped=$(engine_tuning_flags)"
SCALE_ENGINE_CONFIGS_DEFAULT="qps50=--client-go-qps=50 --client-go-burst=100"
SCALE_ENGINE_CONFIGS_DEFAULT+=";shipped=$(engine_tuning_flags)"

# Engine ports of the private setup: hack/up.sh picks free ones once and
# keeps them in up.env, so a setup started later by someone else can take
# them while the engine is stopped; fixed, unusual ports avoid that.
BENCH_ENGINE_METRICS_PORT=${BENCH_ENGINE_METRICS_PORT:-28999}
BENCH_ENGINE_HEALTH_PORT=${BENCH_ENGINE_HEALTH_PORT:-28081}

e2e_setup_started=
e2e_down() {
	if [[ -n $e2e_setup_started && -z ${BENCH_KEEP_SETUP:-} ]]; then
		say "e2e: hack/down.sh (TEAMSPACE_STATE=$TEAMSPACE_STATE)"
		"$hack/down.sh" >&2 || true
	fi
}

# engine_with FLAGS: (re)starts the private setup (hack/up.sh) with the
# engine given these extra flags, on the bench's engine ports.
engine_with() {
	local upenv=$TEAMSPACE_STATE/up/up.env
	if [[ ! -f $upenv ]] || ! "$hack/up.sh" status 2>/dev/null | grep '^hook: running' >/dev/null; then
		METACONTROLLER_ARGS=$1 "$hack/up.sh" up >&2
	fi
	"$hack/up.sh" engine-stop >&2
	sed -i -e "s/^TEAMSPACE_ENGINE_METRICS_PORT=.*/TEAMSPACE_ENGINE_METRICS_PORT=$BENCH_ENGINE_METRICS_PORT/" \
		-e "s/^TEAMSPACE_ENGINE_HEALTH_PORT=.*/TEAMSPACE_ENGINE_HEALTH_PORT=$BENCH_ENGINE_HEALTH_PORT/" "$upenv"
	# the hook runs, so up keeps the ports of up.env and starts the engine
	METACONTROLLER_ARGS=$1 "$hack/up.sh" up >&2
}

e2e() {
	export TEAMSPACE_STATE=${BENCH_STATE:-/tmp/teamspace-bench}
	export HOOK_PORT=${HOOK_PORT:-18380}
	(cd "$hack" && go build -o "$bin/drift" ./bench/drift && go build -o "$bin/fleet" ./bench/fleet)
	trap e2e_down EXIT
	e2e_setup_started=1

	local configs cfg label flags
	IFS=';' read -r -a configs <<<"${ENGINE_CONFIGS:-$ENGINE_CONFIGS_DEFAULT}"
	for cfg in "${configs[@]}"; do
		label=${cfg%%=*}
		flags=${cfg#*=}
		say "e2e: drift, engine config $label: $flags"
		engine_with "$flags"
		eval "$("$hack/up.sh" env)"
		"$bin/drift" -reps "${DRIFT_REPS:-20}" -name "bench-drift-$label" -label "$label" \
			-children "${DRIFT_CHILDREN:-quota,limitrange,rolebinding,networkpolicy}" \
			2>"$out/drift-$label.log" | tee "$out/drift-$label.txt" >&2
	done
	grep -h '^RESULT' "$out"/drift-*.txt | tee "$out/drift.txt" >&2

	# fleet at SCALE_COUNT: a fresh setup per configuration, so each starts
	# from an empty cluster
	IFS=';' read -r -a configs <<<"${SCALE_ENGINE_CONFIGS:-$SCALE_ENGINE_CONFIGS_DEFAULT}"
	: >"$out/scale.txt"
	for cfg in "${configs[@]}"; do
		label=${cfg%%=*}
		flags=${cfg#*=}
		say "e2e: fleet of ${SCALE_COUNT:-200}, engine config $label: $flags (fresh setup)"
		"$hack/down.sh" >&2 || true
		engine_with "$flags"
		eval "$("$hack/up.sh" env)"
		"$bin/fleet" -count "${SCALE_COUNT:-200}" -prefix scale -phases create,steady,catchup \
			-steady "${SCALE_STEADY:-60s}" -down "${SCALE_DOWN:-60s}" \
			-engine-metrics "http://127.0.0.1:$BENCH_ENGINE_METRICS_PORT/metrics" \
			-hook-metrics "$TEAMSPACE_HOOK_URL/metrics" \
			-stop-cmd "'$hack/up.sh' engine-stop" \
			-start-cmd "'$hack/up.sh' engine-start" \
			-label "$label" 2>"$out/scale-$label.log" | tee -a "$out/scale.txt" >&2
	done
	e2e_down
	e2e_setup_started=
	trap - EXIT
}

# -------------------------------------------------------------------- fleet

# cc_patch KEY=VALUE: the merge patch of the CompositeController for one
# cc: setting of FLEET_CONFIGS.
cc_patch() {
	local key=${1%%=*} value=${1#*=}
	case $key in
	ignoreStatusChanges) printf '{"spec":{"parentResource":{"ignoreStatusChanges":%s}}}' "$value" ;;
	resyncPeriodSeconds) printf '{"spec":{"resyncPeriodSeconds":%s}}' "$value" ;;
	customize) [[ $value == off ]] || die "cc:customize=off is the only setting"
		printf '{"spec":{"hooks":{"customize":null}}}' ;;
	*) die "FLEET_CONFIGS: unknown cc:$key" ;;
	esac
}

fleet() {
	export TEAMSPACE_STATE=${BENCH_STATE:-/tmp/teamspace-bench}
	export HOOK_PORT=${HOOK_PORT:-18380}
	export TEAMSPACE_PROFILING=1
	(cd "$hack" && go build -o "$bin/fleet" ./bench/fleet)
	local pprof_port=${BENCH_ENGINE_PPROF_PORT:-28060}
	local window=${FLEET_WINDOW:-60s}
	trap e2e_down EXIT
	e2e_setup_started=1
	local configs cfg label flags count word engine_flags patches fleet_flags
	IFS=';' read -r -a configs <<<"${FLEET_CONFIGS:-shipped=}"
	: >"$out/fleet.txt"
	for cfg in "${configs[@]}"; do
		label=${cfg%%=*}
		flags=${cfg#*=}
		engine_flags="--pprof-address=127.0.0.1:$pprof_port"
		patches=()
		fleet_flags=()
		local quotas_as_children='' policies_off=()
		for word in $flags; do
			case $word in
			cc:quotas=children) quotas_as_children=1 ;;
			admission:-*) policies_off+=("${word#admission:-}") ;;
			cc:*) patches+=("$(cc_patch "${word#cc:}")") ;;
			fleet:*) fleet_flags+=("${word#fleet:}") ;;
			*) engine_flags+=" $word" ;;
			esac
		done
		for count in ${FLEET_COUNTS:-100 1000 2000}; do
			local round engine run
			# fd 3: the programs in the loop read standard input
			while read -r -u 3 round engine; do
				use_engine "$engine"
				run=$(run_label "$label" "$round" "$engine")
				say "fleet: $count TeamSpaces, config $label: $flags, engine $engine, round $round (fresh setup)"
				"$hack/down.sh" >&2 || true
				engine_with "$engine_flags $(engine_flags "$engine")"
				eval "$("$hack/up.sh" env)"
				local p
				for p in "${policies_off[@]}"; do
					kubectl delete mutatingadmissionpolicybinding,mutatingadmissionpolicy "$p" >&2
				done
				for p in "${patches[@]}"; do
					kubectl patch compositecontroller teamspace --type merge -p "$p" >&2
				done
				if [[ -n $quotas_as_children ]]; then
					# where it was before the DecoratorController
					kubectl delete decoratorcontroller teamspace-quotas >&2
					kubectl patch compositecontroller teamspace --type json \
						-p '[{"op":"add","path":"/spec/childResources/1","value":{"apiVersion":"v1","resource":"resourcequotas","updateStrategy":{"method":"InPlace"}}}]' >&2
				fi
				# the engine restarts its controller for a changed CompositeController
				if ((${#patches[@]} > 0)) || [[ -n $quotas_as_children ]]; then
					sleep 5
				fi
				local profile_dir=
				((count < ${FLEET_PROFILE_MIN:-1000})) || profile_dir=$out/fleet-$run-$count
				"$bin/fleet" -count "$count" -label "$run" -state "$TEAMSPACE_STATE" \
					-phases "${FLEET_PHASES:-empty,floor,create,quiet,steady,churn,restart}" -churn "${FLEET_CHURN:-0,10,50,100}" \
					-window "$window" -cost-window "${FLEET_COST_WINDOW:-20s}" -steady "${FLEET_STEADY:-$window}" \
					-engine-metrics "http://127.0.0.1:$BENCH_ENGINE_METRICS_PORT/metrics" \
					-hook-metrics "$TEAMSPACE_HOOK_URL/metrics" \
					-engine-pprof "http://127.0.0.1:$pprof_port" -profile-dir "$profile_dir" \
					-stop-cmd "'$hack/up.sh' engine-stop" -start-cmd "'$hack/up.sh' engine-start" \
					-cleanup-wait 0 "${fleet_flags[@]}" \
					2>"$out/fleet-$run-$count.log" | tee -a "$out/fleet.txt" >&2
			done 3< <(engine_runs)
		done
	done
	e2e_down
	e2e_setup_started=
	trap - EXIT
	fleet_profiles
}

# fleet_profiles: the slices of create and of the quiet phase after it
# merged, per process and phase (<process>-<phase>-all.pprof), and the top
# of every profile fleet wrote or merged.
fleet_profiles() {
	local d f what phase slices
	for d in "$out"/fleet-*/; do
		[[ -d $d ]] || continue
		for what in engine apiserver; do
			for phase in create after; do
				slices=("$d$what-$phase"-[0-9]*.pprof)
				[[ -s ${slices[0]} ]] || continue
				go tool pprof -proto "${slices[@]}" >"$d$what-$phase-all.pprof" 2>/dev/null || true
			done
		done
	done
	for f in "$out"/fleet-*/*.pprof; do
		[[ -s $f ]] || continue
		go tool pprof -top -nodecount 35 "$f" >"${f%.pprof}-top.txt" 2>/dev/null || true
		case $f in
		*-all.pprof) go tool pprof -top -cum -nodecount 60 "$f" >"${f%.pprof}-cum.txt" 2>/dev/null || true ;;
		esac
	done
}

# ----------------------------------------------------------------- failover

# leader_pid PID...: the one of these engines whose metrics say it leads.
leader_pid() {
	local pid port metrics
	for pid in "$@"; do
		port=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n 's/^--metrics-address=127.0.0.1:\([0-9]*\)$/\1/p')
		# no pipe into grep -q: under pipefail curl's SIGPIPE would fail the test
		metrics=$(curl -fsS --max-time 2 "http://127.0.0.1:$port/metrics" 2>/dev/null) || continue
		if grep -q '^leader_election_master_status{.*} 1$' <<<"$metrics"; then
			printf '%s\n' "$pid"
			return 0
		fi
	done
	return 1
}

failover() {
	export TEAMSPACE_STATE=${BENCH_STATE:-/tmp/teamspace-bench}
	export HOOK_PORT=${HOOK_PORT:-18380}
	(cd "$hack" && go build -o "$bin/drift" ./bench/drift)
	trap 'failover_down; e2e_down' EXIT
	e2e_setup_started=1
	local round engine
	while read -r -u 3 round engine; do
		use_engine "$engine"
		failover_run "$(run_label failover "$round" "$engine")" "$(engine_flags "$engine")"
	done 3< <(engine_runs)
	grep -h '^RESULT' "$out/failover.txt" >"$out/failover-results.txt" || true
	e2e_down
	e2e_setup_started=
	trap - EXIT
}

# failover_run LABEL FLAGS: one private setup, two engines (METACONTROLLER_BIN
# with FLAGS), three rounds of SIGKILL and SIGTERM to the leader.
failover_run() {
	local label=$1 flags=$2
	say "failover: $label, engine $METACONTROLLER_BIN $flags"
	local le="--leader-election --leader-election-namespace=kube-system --leader-election-id=teamspace-bench $flags"
	"$hack/down.sh" >&2 || true
	engine_with "$le"
	eval "$("$hack/up.sh" env)"
	local a b tuning round sig
	a=$(cat "$TEAMSPACE_STATE/up/run/metacontroller.pid")
	# shellcheck disable=SC2207 # flags separated by spaces, as in the unit
	tuning=($(engine_tuning_flags))
	# shellcheck disable=SC2086 # $le: flags separated by spaces
	start_bg "$out/failover-b.pid" "$out/failover-b.log" "$METACONTROLLER_BIN" --kubeconfig="$KUBECONFIG" \
		"${tuning[@]}" --discovery-interval=2s --metrics-address=127.0.0.1:28998 \
		--health-probe-bind-address=127.0.0.1:28082 --pprof-address=0 $le
	b=$(cat "$out/failover-b.pid")
	"$bin/drift" -reps 5 -name bench-failover -label "$label-two-engines" -keep 2>"$out/$label-steady.log" | tee -a "$out/failover.txt" >&2
	for round in 1 2 3; do
		for sig in KILL TERM; do
			local leader
			leader=$(leader_pid "$a" "$b") || die "no engine leads"
			say "failover: $label round $round: the leader (pid $leader) gets SIG$sig just before the quota is deleted"
			"$bin/drift" -reps 1 -kinds restore -timeout 120s -name bench-failover -keep -label "$label-sig$sig" \
				-before-cmd "kill -$sig $leader" 2>>"$out/$label-sig$sig.log" | tee -a "$out/failover.txt" >&2
			# the old leader comes back as the standby
			wait_gone "$leader"
			if [[ $leader == "$a" ]]; then
				"$hack/up.sh" engine-start >&2
				a=$(cat "$TEAMSPACE_STATE/up/run/metacontroller.pid")
			else
				# shellcheck disable=SC2086
				start_bg "$out/failover-b.pid" "$out/failover-b.log" "$METACONTROLLER_BIN" --kubeconfig="$KUBECONFIG" \
					"${tuning[@]}" --discovery-interval=2s --metrics-address=127.0.0.1:28998 \
					--health-probe-bind-address=127.0.0.1:28082 --pprof-address=0 $le
				b=$(cat "$out/failover-b.pid")
			fi
			sleep 3
		done
	done
	failover_down
}

# wait_gone PID: up to 20 s for the process to exit (and be reaped).
wait_gone() {
	local i
	for ((i = 0; i < 200; i++)); do
		if [[ ! -d /proc/$1 ]] || grep -q '^State:.*Z' "/proc/$1/status" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
}

failover_down() {
	[[ -f $out/failover-b.pid ]] && stop_owned "$out/failover-b.pid" "$METACONTROLLER_BIN" "the second engine" 20
	return 0
}

# ------------------------------------------------------------------- faults

# faults: the fault run at scale, with the stock engine (the one hack/up.sh
# runs), as the suite's short run but longer and larger.
faults() {
	local count=${FAULT_RUN_COUNT:-1000} length=${FAULT_RUN_FOR:-20m} seed=${FAULT_RUN_SEED:-67} ops=${FAULT_RUN_OPS:-2}
	local kube=${FAULT_RUN_KUBE:-stock}
	case $kube in
	stock) ;;
	# kube-controller-manager with the changes proposed upstream
	# (hack/bench/kubernetes-patches): exports TEAMSPACE_KUBE_BIN_DIR
	proposed) ensure_proposed_kube ;;
	*) die "FAULT_RUN_KUBE=$kube: want stock or proposed" ;;
	esac
	say "faults: $count TeamSpaces, $length of faults, seed $seed, $ops operations/s, $kube Kubernetes"
	mkdir -p "$out/faults"
	ensure_versitygw
	(cd "$repo" && FAULT_RUN_COUNT=$count FAULT_RUN_FOR=$length FAULT_RUN_SEED=$seed FAULT_RUN_OPS=$ops \
		TEAMSPACE_REQUIRE_ENGINE=1 TEAMSPACE_REQUIRE_S3=1 WALKTHROUGH_OUT="$out/faults" \
		go test -count=1 -timeout 120m -run '^TestFaultRun$' -v ./tests/e2e) 2>&1 | tee "$out/faults.txt" >&2 ||
		die "faults: the run failed (invariants, or the setup): $out/faults.txt"
	grep -h 'RESULT' "$out/faults.txt" | sed 's/^ *faults_test.go:[0-9]*: //' >"$out/faults-results.txt" || true
	cat "$out/faults-results.txt"
}

# --------------------------------------------------------------------- main

steps=("$@")
((${#steps[@]})) || steps=(all)
# every engine is found or built before the first measurement (and before
# machine, which lists their versions)
for s in "${steps[@]}"; do
	case $s in
	all | e2e | fleet | failover | faults) resolve_engines ;;
	esac
done
for s in "${steps[@]}"; do
	case $s in
	all) machine; micro; http; e2e ;;
	*) "$s" ;;
	esac
done
say "results in $out"
