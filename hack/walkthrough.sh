#!/usr/bin/env bash
# hack/walkthrough.sh: shows, on a live cluster where the hook and Metacontroller
# run, what TeamSpace does and does not do, and writes the evidence as JSON.
#
#   1 a TeamSpace with only the CRD installed gets nothing  -> before.json
#   2 what bumps metadata.generation; status via the main resource -> generation.json
#   3 the CompositeController makes namespace and quota; a second pass writes nothing
#                                                           -> reconcile.json
#   4 a new TeamSpace is served with nobody acting          -> newspace.json
#   5 a deleted / edited quota comes back                   -> drift.json
#   6 deletion waits for the finalizer, the record is archived, a foreign
#     finalizer survives                                    -> cleanup.json
#   7 with the engine stopped nothing happens; started, it catches up
#                                                           -> catchup.json
#   8 summary                                               -> report.json
#
# It deletes and re-creates the CompositeController and the TeamSpaces alpha,
# beta, gamma and delta (and so their namespaces team-*): use a test cluster.
# Leftovers of an earlier run are removed first, so it can be run again.
#
# Usage: hack/walkthrough.sh [options]
#   -o, --out DIR          evidence directory (env WALKTHROUGH_OUT, default ./walkthrough-out)
#   --cluster local|current
#                          local (default): the setup of hack/up.sh, found with
#                          `hack/up.sh env` (honours TEAMSPACE_STATE);
#                          current: kubectl's current KUBECONFIG/context as it is
#                          (env WALKTHROUGH_CLUSTER)
#   --hook-url URL         base URL written into the applied CompositeController
#                          instead of http://127.0.0.1:8080 (env HOOK_URL; local
#                          default: the hook hack/up.sh started)
#   --archive-dir DIR      the hook's --archive-dir, read in step 6 (env ARCHIVE_DIR;
#                          local default: the one of hack/up.sh under its state dir)
#   --resync SECONDS       resyncPeriodSeconds of the applied copy (env RESYNC_SECONDS;
#                          default: as in compositecontroller.yaml) for a quick run
#   --engine-stop CMD      how to stop the engine (env ENGINE_STOP; default
#                          `hack/up.sh engine-stop`); on a k3s node e.g.
#                          ENGINE_STOP="systemctl stop metacontroller"
#   --engine-start CMD     how to start it again (env ENGINE_START; default
#                          `hack/up.sh engine-start`)
#   --timeout SECONDS      limit for each wait (env WAIT_TIMEOUT, default 120)
# Needs bash, kubectl and jq (installed with apt-get when missing and root).
set -euo pipefail
export LC_ALL=C

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# compositecontroller_at (its own die and log below take over)
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$repo/hack/lib.sh"

out=${WALKTHROUGH_OUT:-./walkthrough-out}
cluster=${WALKTHROUGH_CLUSTER:-local}
hook_url=${HOOK_URL:-}
archive_dir=${ARCHIVE_DIR:-}
resync=${RESYNC_SECONDS:-}
engine_stop=${ENGINE_STOP:-}
engine_start=${ENGINE_START:-}
timeout=${WAIT_TIMEOUT:-120}
observe=${OBSERVE_SECONDS:-5}     # step 1: how long a TeamSpace is left alone
stopped=${STOPPED_SECONDS:-8}     # step 7: how long the engine stays stopped

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }
die() { printf 'walkthrough: error: %s\n' "$*" >&2; exit 1; }

while (($#)); do
	case $1 in
	-o | --out) out=${2:?}; shift ;;
	--cluster) cluster=${2:?}; shift ;;
	--hook-url) hook_url=${2:?}; shift ;;
	--archive-dir) archive_dir=${2:?}; shift ;;
	--resync) resync=${2:?}; shift ;;
	--engine-stop) engine_stop=${2:?}; shift ;;
	--engine-start) engine_start=${2:?}; shift ;;
	--timeout) timeout=${2:?}; shift ;;
	-h | --help) usage; exit 0 ;;
	*) die "unknown argument $1 (see --help)" ;;
	esac
	shift
done

if ! command -v jq >/dev/null; then
	if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
		echo "walkthrough: installing jq" >&2
		apt-get install -y -qq jq >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq jq >/dev/null; }
	fi
	command -v jq >/dev/null || die "jq is needed (apt-get install jq)"
fi

case $cluster in
local)
	env_out=$("$repo/hack/up.sh" env) || die "no local setup: run hack/up.sh first, or use --cluster current"
	eval "$env_out"
	hook_url=${hook_url:-$TEAMSPACE_HOOK_URL}
	archive_dir=${archive_dir:-$TEAMSPACE_ARCHIVE_DIR}
	;;
current)
	hook_url=${hook_url:-${TEAMSPACE_HOOK_URL:-}}
	archive_dir=${archive_dir:-${TEAMSPACE_ARCHIVE_DIR:-}}
	;;
*) die "--cluster must be local or current" ;;
esac
if [[ -z $engine_stop ]]; then engine_stop="$(printf '%q' "$repo/hack/up.sh") engine-stop"; fi
if [[ -z $engine_start ]]; then engine_start="$(printf '%q' "$repo/hack/up.sh") engine-start"; fi
command -v kubectl >/dev/null || die "kubectl not found"
kubectl get crd teamspaces.platform.labhub.io >/dev/null || die "CRD teamspaces.platform.labhub.io not installed (kubectl apply -f crd.yaml)"

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/{before,generation,reconcile,newspace,drift,cleanup,catchup,report}.json "$out"/watch-*.log

cc_file=$repo/compositecontroller.yaml
cc_name=$(awk '/^metadata:/ {m = 1; next} m && /^  name:/ {print $2; exit}' "$cc_file")
resync_file=$(awk '/^ *resyncPeriodSeconds:/ {print $2; exit}' "$cc_file")
resync=${resync:-${resync_file:-0}}
[[ $resync =~ ^[0-9]+$ ]] || die "resync period must be whole seconds, not $resync"
engine_finalizer=metacontroller.io/compositecontroller-$cc_name
names=(alpha beta gamma delta)

# ---- helpers ---------------------------------------------------------------

log() { printf '[%s] %s\n' "$(date +%T)" "$*" >&2; }
# k: kubectl whose own output goes to stderr, prefixed, so stdout keeps the table.
k() { kubectl "$@" 2>&1 | sed 's/^/    kubectl: /' >&2; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
earliest() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%s", (a < b ? a : b) }'; }

# poll DESC CMD...: run CMD every 50 ms until it succeeds (or WAIT_TIMEOUT);
# POLL_END is the time it first did.
POLL_END=
poll() {
	local desc=$1 deadline
	shift
	deadline=$((${EPOCHREALTIME%.*} + timeout))
	until "$@" >/dev/null; do
		((${EPOCHREALTIME%.*} < deadline)) || die "timed out after ${timeout}s waiting for $desc"
		sleep 0.05
	done
	POLL_END=$EPOCHREALTIME
}

# watch_start NAME RESOURCE: `kubectl get RESOURCE -A -w` in the background,
# each event stamped on arrival into $out/watch-NAME.log; returns once the
# initial list has arrived (the watch then runs from that list's version).
watch_pids=()
stamp() { local line; while IFS= read -r line; do printf '%s %s\n' "$EPOCHREALTIME" "$line"; done; }
watch_start() {
	local f=$out/watch-$1.log i
	: >"$f"
	kubectl get "$2" -A --watch --output-watch-events \
		-o jsonpath='{.type} {.object.metadata.namespace}/{.object.metadata.name} {.object.metadata.uid} {.object.spec.hard.pods}{"\n"}' \
		2>>"$out/watch-errors.log" > >(stamp >>"$f") &
	watch_pids+=("$!")
	for ((i = 0; i < 100; i++)); do
		[[ -s $f ]] && return 0
		sleep 0.05
	done
	log "   (no initial list from the $2 watch within 5 s: going on)"
}
watch_stop() {
	((${#watch_pids[@]})) && kill "${watch_pids[@]}" 2>/dev/null
	watch_pids=()
}
# event_time NAME TYPE NS/NAME [UID|!UID] [PODS]: arrival time of the first
# matching event in watch NAME (a uid of "!x" means any uid but x).
event_time() {
	awk -v t="$2" -v key="$3" -v uid="${4:-}" -v pods="${5:-}" '
		$2 == t && $3 == key && (pods == "" || $5 == pods) &&
		(uid == "" || (substr(uid, 1, 1) == "!" ? $4 != substr(uid, 2) : $4 == uid)) { print $1; found = 1; exit }
		END { exit !found }' "$out/watch-$1.log"
}
# change_times NAME NS/NAME UID FROM TO: arrival times of the first event with
# pods FROM and of the first one after it with pods TO.
change_times() {
	awk -v key="$2" -v uid="$3" -v a="$4" -v b="$5" '
		$3 == key && $4 == uid { if (!e && $5 == a) e = $1; else if (e && $5 == b) { print e, $1; found = 1; exit } }
		END { exit !found }' "$out/watch-$1.log"
}

ts_json() { kubectl get teamspace "$1" -o json --ignore-not-found; }
ts_field() { kubectl get teamspace "$1" -o jsonpath="$2"; }
ts_exists() { [[ -n $(kubectl get teamspace "$1" --ignore-not-found -o name) ]]; }
ts_gone() { ! ts_exists "$1"; }
ns_exists() { [[ -n $(kubectl get namespace "$1" --ignore-not-found -o name) ]]; }
ns_gone() { ! ns_exists "$1"; }
quota_field() { kubectl get resourcequota team-quota -n "$1" --ignore-not-found -o jsonpath="$2"; }
quota_pods_is() { [[ $(quota_field "$1" '{.spec.hard.pods}') == "$2" ]]; }
quota_status_current() { [[ -n $(quota_field "$1" '{.status.hard.pods}') && $(quota_field "$1" '{.status.hard.pods}') == $(quota_field "$1" '{.spec.hard.pods}') ]]; }
observed_current() {
	local j
	j=$(ts_json "$1")
	[[ -n $j ]] && jq -e '.status.observedGeneration == .metadata.generation' <<<"$j" >/dev/null
}
has_finalizer() { [[ -n $(ts_json "$1" | jq -r --arg f "$2" '.metadata.finalizers // [] | index($f) // empty') ]]; }
lacks_finalizer() { ! has_finalizer "$@"; }

# manifest NAME PODS [CPU] [FINALIZER]: writes $out/NAME.yaml and prints its path.
manifest() {
	local f=$out/$1.yaml
	{
		printf 'apiVersion: platform.labhub.io/v1alpha1\nkind: TeamSpace\nmetadata:\n  name: %s\n' "$1"
		[[ -n ${4:-} ]] && printf '  finalizers:\n    - %s\n' "$4"
		printf 'spec:\n  pods: %s\n' "$2"
		[[ -n ${3:-} ]] && printf '  cpu: "%s"\n' "$3"
	} >"$f"
	printf '%s\n' "$f"
}

# apply_controller: the CompositeController as applied, kept in $out.
apply_controller() {
	local f=$out/compositecontroller.applied.yaml
	compositecontroller_at "${hook_url:-http://127.0.0.1:8080}" |
		sed -e "s#^\( *resyncPeriodSeconds:\).*#\1 $resync#" >"$f"
	k apply -f "$f"
}

# remove_finalizer NAME FINALIZER: drop one finalizer, keep the others (the
# resourceVersion guards against a concurrent change; retried on conflict).
remove_finalizer() {
	local j patch i
	for ((i = 0; i < 5; i++)); do
		j=$(ts_json "$1")
		[[ -n $j ]] || return 0
		jq -e --arg f "$2" '(.metadata.finalizers // []) | index($f)' <<<"$j" >/dev/null || return 0
		patch=$(jq -c --arg f "$2" '{metadata: {resourceVersion: .metadata.resourceVersion,
			finalizers: ((.metadata.finalizers // []) - [$f])}}' <<<"$j")
		k patch teamspace "$1" --type=merge -p "$patch" && return 0
		sleep 0.2
	done
	die "could not remove finalizer $2 from TeamSpace $1"
}

engine_stopped_by_us=
on_exit() {
	watch_stop
	if [[ -n $engine_stopped_by_us ]]; then
		log "restarting the engine stopped by this run: $engine_start"
		bash -c "$engine_start" >&2 || true
	fi
}
trap on_exit EXIT

# ---- 0. leftovers of an earlier run ------------------------------------------

log "0. removing leftovers of an earlier run"
leftovers=()
for n in "${names[@]}"; do ts_exists "$n" && leftovers+=("$n"); done
if ((${#leftovers[@]})); then
	log "   leftover TeamSpaces: ${leftovers[*]} (the CompositeController is applied so the engine can finalize them)"
	apply_controller
	for n in "${leftovers[@]}"; do
		remove_finalizer "$n" example.com/keep
		k delete teamspace "$n" --wait=false --ignore-not-found
	done
	for n in "${leftovers[@]}"; do poll "leftover TeamSpace $n to be gone (is the engine running?)" ts_gone "$n"; done
fi
for n in "${names[@]}"; do poll "leftover namespace team-$n to be gone" ns_gone "team-$n"; done

# ---- 1. only the CRD ------------------------------------------------------------

log "1. only the CRD: deleting CompositeController $cc_name if present, creating alpha (pods 4)"
k delete compositecontroller "$cc_name" --ignore-not-found --wait=true
sleep 2 # the engine drops its controller on the watch event
k create -f "$(manifest alpha 4)"
sleep "$observe"
alpha=$(ts_json alpha)
ns_alpha=false
ns_exists team-alpha && ns_alpha=true
jq -n --argjson ts "$alpha" --argjson ns "$ns_alpha" --argjson s "$observe" \
	'{uid: $ts.metadata.uid, namespace_exists: $ns, observed_seconds: $s,
	  finalizers: ($ts.metadata.finalizers // []), status: ($ts.status // null)}' >"$out/before.json"
alpha_uid=$(jq -r .uid "$out/before.json")

# ---- 2. generation ----------------------------------------------------------------

log "2. generation: label, status via the main resource, spec"
gen() { ts_field alpha '{.metadata.generation}'; }
g0=$(gen)
k label teamspace alpha owner=platform --overwrite
g1=$(gen)
k patch teamspace alpha --type=merge -p '{"status":{"observedGeneration":7}}'
status_via_main=$(ts_json alpha | jq -c '.status // null')
g_status=$(gen)
k patch teamspace alpha --type=merge -p '{"spec":{"pods":6}}'
g2=$(gen)
jq -n --arg uid "$alpha_uid" --argjson g0 "$g0" --argjson g1 "$g1" --argjson gs "$g_status" \
	--argjson g2 "$g2" --argjson st "$status_via_main" \
	'{uid: $uid, gen_initial: $g0, gen_after_label: $g1, gen_after_status_patch: $gs,
	  gen_after_spec: $g2, status_via_main: $st}' >"$out/generation.json"

# ---- 3. the CompositeController ------------------------------------------------------

log "3. applying the CompositeController (resync ${resync}s); waiting for team-alpha and its quota"
t0=$EPOCHREALTIME
apply_controller
poll "namespace team-alpha" ns_exists team-alpha
poll "quota team-alpha/team-quota with pods 6" quota_pods_is team-alpha 6
poll "alpha's observedGeneration" observed_current alpha
converge=$(secs "$t0" "$POLL_END")
poll "the quota controller's status on team-quota" quota_status_current team-alpha
sleep 1
rvs() {
	jq -n --arg ts "$(ts_field alpha '{.metadata.resourceVersion}')" \
		--arg ns "$(kubectl get namespace team-alpha -o jsonpath='{.metadata.resourceVersion}')" \
		--arg q "$(quota_field team-alpha '{.metadata.resourceVersion}')" \
		'{teamspace: $ts, namespace: $ns, quota: $q}'
}
rv_before=$(rvs)
watch_s=$((2 * resync + 2))
log "   converged in ${converge}s; watching resourceVersions for ${watch_s}s (two resync periods)"
sleep "$watch_s"
rv_after=$(rvs)
jq -n --arg tsuid "$alpha_uid" \
	--arg quid "$(quota_field team-alpha '{.metadata.uid}')" \
	--arg owner "$(kubectl get namespace team-alpha -o jsonpath='{.metadata.ownerReferences[0].uid}')" \
	--argjson before "$rv_before" --argjson after "$rv_after" \
	--argjson conv "$converge" --argjson resync "$resync" --argjson w "$watch_s" \
	'{quota_uid: $quid, namespace_owner_uid: $owner, second_pass_rv_changed: ($before != $after),
	  teamspace_uid: $tsuid, converge_seconds: $conv, resync_period_seconds: $resync,
	  watched_seconds: $w, rv_before: $before, rv_after: $after}' >"$out/reconcile.json"

# ---- 4. a new TeamSpace --------------------------------------------------------------

# Timings in steps 4 and 5 come from watch events (kubectl get -w), each line
# stamped on arrival: "<epoch seconds> <event> <namespace>/<name> <uid> <pods>".
# A change starts at the earlier of its own event and the return of the request
# that made it (a busy machine can deliver an event late, with the next one).
log "4. a new TeamSpace gamma (pods 3): namespace and quota with nobody acting"
watch_start teamspaces teamspaces
watch_start namespaces namespaces
watch_start quotas resourcequotas
k create -f "$(manifest gamma 3)"
t_ret=$EPOCHREALTIME
gamma_uid=$(ts_field gamma '{.metadata.uid}')
poll "namespace team-gamma" event_time namespaces ADDED /team-gamma
poll "quota team-gamma/team-quota" event_time quotas ADDED team-gamma/team-quota "" 3
t_ts=$(earliest "$(event_time teamspaces ADDED /gamma)" "$t_ret")
ns_s=$(secs "$t_ts" "$(event_time namespaces ADDED /team-gamma)")
q_s=$(secs "$t_ts" "$(event_time quotas ADDED team-gamma/team-quota)")
k delete teamspace gamma --timeout="${timeout}s"
jq -n --arg uid "$gamma_uid" --argjson ns "$ns_s" --argjson q "$q_s" \
	'{name: "gamma", uid: $uid, namespace_seconds: $ns, quota_seconds: $q,
	  measured: "watch events: TeamSpace ADDED (or kubectl create returned, if earlier) to namespace / quota ADDED", deleted: true}' >"$out/newspace.json"

# ---- 5. drift ------------------------------------------------------------------------

log "5. drift: deleting team-alpha/team-quota by hand, then editing its pods to 99"
old_quota=$(quota_field team-alpha '{.metadata.uid}')
k delete resourcequota team-quota -n team-alpha --wait=false
t_del_ret=$EPOCHREALTIME
poll "team-quota to come back" event_time quotas ADDED team-alpha/team-quota "!$old_quota"
t_del=$(event_time quotas DELETED team-alpha/team-quota "$old_quota")
t_back=$(event_time quotas ADDED team-alpha/team-quota "!$old_quota")
restore=$(secs "$(earliest "$t_del" "$t_del_ret")" "$t_back")
new_quota=$(quota_field team-alpha '{.metadata.uid}')
edited=$(kubectl patch resourcequota team-quota -n team-alpha --type=merge \
	-p '{"spec":{"hard":{"pods":"99"}}}' -o jsonpath='{.spec.hard.pods}')
t_patch_ret=$EPOCHREALTIME
poll "team-quota pods back to 6" change_times quotas team-alpha/team-quota "$new_quota" 99 6
read -r t_edit t_revert < <(change_times quotas team-alpha/team-quota "$new_quota" 99 6)
revert=$(secs "$(earliest "$t_edit" "$t_patch_ret")" "$t_revert")
reverted=$(quota_field team-alpha '{.spec.hard.pods}')
watch_stop
jq -n --arg d "$old_quota" --arg r "$new_quota" --argjson rs "$restore" \
	--argjson e "$edited" --argjson rv "$reverted" --argjson rvs "$revert" \
	--argjson times "$(printf '%s\n' "$t_del_ret" "$t_del" "$t_back" "$t_patch_ret" "$t_edit" "$t_revert" | jq -s -c .)" \
	'{deleted_uid: $d, restored_uid: $r, restore_seconds: ($rs | floor), edited_to: $e,
	  reverted_to: $rv, restore_seconds_fractional: $rs, revert_seconds_fractional: $rvs,
	  epoch_times: ([["delete_returned", "deleted_event", "restored_event", "patch_returned",
	                  "edited_event", "reverted_event"], $times] | transpose | map({(.[0]): .[1]}) | add),
	  measured: "watch events: DELETED (or the delete request returned, if earlier) to ADDED under a new uid; MODIFIED to 99 (or the patch returned) to MODIFIED back to 6"}' \
	>"$out/drift.json"

# ---- 6. deletion, finalizer, archive ------------------------------------------------

log "6. beta (pods 2, cpu 500m): deletion waits for the engine's finalizer"
k create -f "$(manifest beta 2 500m)"
poll "namespace team-beta" ns_exists team-beta
poll "quota team-beta/team-quota" quota_pods_is team-beta 2
poll "beta's finalizer" has_finalizer beta "$engine_finalizer"
beta_uid=$(ts_field beta '{.metadata.uid}')
t0=$EPOCHREALTIME
k delete teamspace beta --wait=false
seen=$(ts_json beta)
seen=${seen:-null}
poll "beta to be gone" ts_gone beta
gone_s=$(secs "$t0" "$POLL_END")
ns_gone=false
ns_phase=$(kubectl get namespace team-beta --ignore-not-found -o jsonpath='{.status.phase}')
[[ -z $ns_phase ]] && ns_gone=true
archive_file=
archive_record=null
if [[ -n $archive_dir && -d $archive_dir ]]; then
	find_record() {
		local f
		for f in "$archive_dir"/*.json; do
			[[ -e $f ]] || continue
			if jq -e --arg uid "$beta_uid" '.uid == $uid' "$f" >/dev/null 2>&1; then
				archive_file=$f
				return 0
			fi
		done
		return 1
	}
	deadline=$((SECONDS + 10))
	until find_record || ((SECONDS > deadline)); do sleep 0.2; done
	[[ -n $archive_file ]] && archive_record=$(jq -c . "$archive_file")
else
	log "   no archive directory readable here (--archive-dir): archived is false"
fi

log "6b. delta with another controller's finalizer example.com/keep"
k create -f "$(manifest delta 1 "" example.com/keep)"
poll "namespace team-delta" ns_exists team-delta
poll "delta's engine finalizer" has_finalizer delta "$engine_finalizer"
delta_uid=$(ts_field delta '{.metadata.uid}')
fin_before=$(ts_json delta | jq -c '.metadata.finalizers')
k delete teamspace delta --wait=false
poll "the engine to drop its finalizer from delta" lacks_finalizer delta "$engine_finalizer"
sleep 2
delta_after=$(ts_json delta)
delta_after=${delta_after:-null}
remove_finalizer delta example.com/keep
poll "delta to be gone once example.com/keep is removed" ts_gone delta

jq -n --arg uid "$beta_uid" --argjson seen "$seen" --argjson ng "$ns_gone" --arg phase "$ns_phase" \
	--argjson gs "$gone_s" --arg ef "$engine_finalizer" --arg af "$archive_file" --argjson ar "$archive_record" \
	--arg duid "$delta_uid" --argjson fb "$fin_before" --argjson da "$delta_after" \
	'{uid: $uid,
	  blocked_seen: ($seen != null and $seen.metadata.deletionTimestamp != null
	                 and (($seen.metadata.finalizers // []) | index($ef)) != null),
	  namespace_gone: $ng,
	  finalizer: ([($seen.metadata.finalizers // [])[] | select(startswith("metacontroller.io/"))] | first // null),
	  archived: ($ar != null and $ar.uid == $uid),
	  seen_right_after_delete: (if $seen == null then null else
	      {deletionTimestamp: $seen.metadata.deletionTimestamp, finalizers: $seen.metadata.finalizers} end),
	  seconds_until_gone: $gs,
	  namespace_phase_when_teamspace_gone: (if $phase == "" then null else $phase end),
	  archive_file: (if $af == "" then null else $af end), archive_record: $ar,
	  foreign_finalizer: {name: "delta", uid: $duid, finalizers_before_delete: $fb,
	      after_engine_finalized: (if $da == null then null else
	          {exists: true, deletionTimestamp: $da.metadata.deletionTimestamp,
	           finalizers: $da.metadata.finalizers} end),
	      kept: ($da != null and (($da.metadata.finalizers // []) == ["example.com/keep"])),
	      gone_after_removing_it: true}}' >"$out/cleanup.json"

# ---- 7. engine stopped ---------------------------------------------------------------

log "7. stopping the engine ($engine_stop), alpha pods -> 8, waiting ${stopped}s"
engine_stopped_by_us=1
bash -c "$engine_stop" >&2
k patch teamspace alpha --type=merge -p '{"spec":{"pods":8}}'
sleep "$stopped"
gen_now=$(ts_field alpha '{.metadata.generation}')
obs_stopped=$(ts_field alpha '{.status.observedGeneration}')
q_stopped=$(quota_field team-alpha '{.spec.hard.pods}')
log "   starting the engine ($engine_start)"
t0=$EPOCHREALTIME
bash -c "$engine_start" >&2
engine_stopped_by_us=
poll "alpha's observedGeneration after the restart" observed_current alpha
poll "team-alpha quota pods 8" quota_pods_is team-alpha 8
catch=$(secs "$t0" "$POLL_END")
jq -n --argjson g "$gen_now" --argjson os "${obs_stopped:-null}" --arg qs "$q_stopped" \
	--argjson oa "$(ts_field alpha '{.status.observedGeneration}')" \
	--arg qa "$(quota_field team-alpha '{.spec.hard.pods}')" --argjson c "$catch" --argjson st "$stopped" \
	'{generation: $g, observed_while_stopped: $os, quota_pods_while_stopped: $qs,
	  observed_after_start: $oa, quota_pods_after_start: $qa,
	  stopped_seconds: $st, catch_up_seconds: $c}' >"$out/catchup.json"

# ---- 8. report -------------------------------------------------------------------------

[[ -s $out/watch-errors.log ]] || rm -f "$out/watch-errors.log"
log "8. report"
jq -n --slurpfile b "$out/before.json" --slurpfile g "$out/generation.json" \
	--slurpfile d "$out/drift.json" --slurpfile c "$out/cleanup.json" --slurpfile k "$out/catchup.json" \
	'$b[0] as $b | $g[0] as $g | $d[0] as $d | $c[0] as $c | $k[0] as $k |
	{crd_alone_created_namespace: $b.namespace_exists,
	 status_bumps_generation: ($g.gen_after_status_patch != $g.gen_after_label),
	 restore_seconds: $d.restore_seconds,
	 finalizer: $c.finalizer,
	 archived: $c.archived,
	 generations_behind_while_stopped: ($k.generation - ($k.observed_while_stopped // 0)),
	 trigger: (if $k.observed_after_start == $k.generation and $k.quota_pods_after_start == "8"
	           then "level" else "none seen" end)}' >"$out/report.json"

# ---- table -------------------------------------------------------------------------------

row() { printf '%-3s %-58s %s\n' "$1" "$2" "$3"; }
v() { jq -c "$2" "$out/$1"; }
echo
row "#" "evidence ($out)" "value"
row 1 "namespace with only the CRD (before.json)" "$(v before.json .namespace_exists)"
row 2 "generation initial / after label (generation.json)" "$(v generation.json '[.gen_initial, .gen_after_label]')"
row 2 "generation after status patch / after spec" "$(v generation.json '[.gen_after_status_patch, .gen_after_spec]')"
row 2 "status right after patching it via the main resource" "$(v generation.json .status_via_main)"
row 3 "namespace owner = TeamSpace uid (reconcile.json)" "$(v reconcile.json '.namespace_owner_uid == .teamspace_uid')"
row 3 "converged after applying the controller, s" "$(v reconcile.json .converge_seconds)"
row 3 "resourceVersion changed over $((2 * resync + 2)) s (2 resyncs)" "$(v reconcile.json .second_pass_rv_changed)"
row 4 "new TeamSpace: namespace / quota after, s (newspace.json)" "$(v newspace.json '[.namespace_seconds, .quota_seconds]')"
row 5 "deleted quota back under a new uid after, s (drift.json)" "$(v drift.json '.restore_seconds_fractional')"
row 5 "quota pods edited to / reverted to (after s)" "$(v drift.json '[.edited_to, .reverted_to, .revert_seconds_fractional]')"
row 6 "deleted beta still there with finalizer (cleanup.json)" "$(v cleanup.json .blocked_seen)"
row 6 "finalizer" "$(v cleanup.json .finalizer)"
row 6 "beta gone after, s / namespace gone then" "$(v cleanup.json '[.seconds_until_gone, .namespace_gone]')"
row 6 "archive record holds beta's uid" "$(v cleanup.json '[.archived, .archive_file]')"
row 6 "example.com/keep kept after the engine finalized" "$(v cleanup.json '.foreign_finalizer.kept')"
row 7 "generation / observed / quota pods, engine stopped" "$(v catchup.json '[.generation, .observed_while_stopped, .quota_pods_while_stopped]')"
row 7 "observed / quota pods after start (catchup.json)" "$(v catchup.json '[.observed_after_start, .quota_pods_after_start]')"
row 7 "caught up after start, s" "$(v catchup.json .catch_up_seconds)"
echo
echo "report.json:"
jq . "$out/report.json"
