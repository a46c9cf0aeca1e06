#!/usr/bin/env bash
# hack/deploy/status.sh: an operator's report on TeamSpaces and the archive.
#
# Prints two tables, and between them the team-* namespaces that no
# TeamSpace owns, if there are any, and the access in team namespaces that
# spec.owners does not govern (RoleBindings other than team-owners, with
# their role and subjects; ServiceAccount token Secrets, if any):
#   TeamSpaces       NAME, READY (status of condition Ready), REASON, AGE,
#                    PROTECTED (annotation platform.labhub.io/protected is
#                    "true"), DELETING: for a TeamSpace with a
#                    deletionTimestamp, what its deletion waits for (the
#                    finalizers still on it, and whether namespace
#                    team-<name> still exists or is Terminating); "-" otherwise.
#   Archive records  NAME, UID, FILE, DELETED AT (the record's
#                    deletionTimestamp, else the file's mtime), oldest first,
#                    from the archive directory or, given the hook's
#                    --archive-s3-* settings, from the bucket (FILE is then
#                    the object's name in the folder): the hook binary's
#                    `teamspace-hook archive list`, with the same flags.
#                    A file that is not a record is listed as (unreadable).
# A missing, empty or unreadable archive directory, or a bucket that cannot
# be read, is reported in one line; the report goes on. It changes nothing.
#
# Usage: hack/deploy/status.sh [options]
#   --archive-dir DIR    the hook's --archive-dir (default
#                        $DESTDIR/var/lib/teamspace/archive, as install.sh)
#   --archive-s3-endpoint URL, --archive-s3-bucket NAME, --archive-s3-folder F,
#   --archive-s3-region R, --archive-s3-access-key-file FILE,
#   --archive-s3-secret-key-file FILE, --archive-s3-ca-file FILE
#   --archive-s3-timeout D
#                        read the records from the hook's bucket instead (the
#                        hook's flags, same values)
#   --kubeconfig FILE    kubeconfig to use (default $KUBECONFIG, else
#                        /etc/rancher/k3s/k3s.yaml when readable, else kubectl's
#                        own default)
#   -h, --help
# Environment: KUBECONFIG, TEAMSPACE_ARCHIVE_DIR (as --archive-dir; hack/up.sh
# sets it), DESTDIR, KUBECTL, HOOK_BIN (the teamspace-hook that lists the
# archive; default: the installed one, else one built from this checkout).
# Exits 1 with a one-line error when the API server cannot be reached.
set -euo pipefail
export LC_ALL=C
prog=status.sh
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

archive_dir=${TEAMSPACE_ARCHIVE_DIR:-}
kubeconfig=""
s3_flags=()
while (($# > 0)); do
	case $1 in
	--archive-dir=*) archive_dir=${1#*=} ;;
	--archive-dir)
		(($# > 1)) || die "--archive-dir wants a directory"
		archive_dir=$2
		shift
		;;
	--archive-s3-*=*) s3_flags+=("$1") ;; # the hook checks them
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
archive_dir=${archive_dir:-$statedir/archive}
# The bucket, given one, is where the records are (as for the hook).
archive_flags=("--archive-dir=$archive_dir")
((${#s3_flags[@]} == 0)) || archive_flags=("${s3_flags[@]}")

# The hook binary lists the archive, with its own flags and S3 client:
# HOOK_BIN, else the installed one, else one built from this checkout.
hook_bin=${HOOK_BIN:-}
if [[ -z $hook_bin && -x $bindir/teamspace-hook ]]; then
	hook_bin=$bindir/teamspace-hook
elif [[ -z $hook_bin ]]; then
	build_dir=$(mktemp -d)
	trap 'rm -rf "$build_dir"' EXIT
	(cd "$repo" && CGO_ENABLED=0 "${GO:-go}" build -o "$build_dir/teamspace-hook" ./hook) ||
		die "no teamspace-hook to list the archive with: set HOOK_BIN, or run from a checkout with Go"
	hook_bin=$build_dir/teamspace-hook
fi
if [[ -n $kubeconfig ]]; then
	export KUBECONFIG=$kubeconfig
elif [[ -z ${KUBECONFIG:-} && -r /etc/rancher/k3s/k3s.yaml ]]; then
	export KUBECONFIG=/etc/rancher/k3s/k3s.yaml
fi

# table prints tab-separated rows (the first is the header) as aligned
# columns, three spaces apart, the last column unpadded.
table() {
	awk -F'\t' '
		{ for (i = 1; i <= NF; i++) { cell[NR, i] = $i; if (length($i) > w[i]) w[i] = length($i) } n[NR] = NF }
		END {
			for (r = 1; r <= NR; r++) {
				line = ""
				for (i = 1; i < n[r]; i++) line = line sprintf("%-" w[i] "s   ", cell[r, i])
				print line cell[r, n[r]]
			}
		}'
}

# age SECONDS prints a duration as kubectl does, roughly: 42s, 7m, 5h, 3d.
age() {
	local s=$1
	if ((s < 120)); then
		printf '%ds' "$s"
	elif ((s < 7200)); then
		printf '%dm' $((s / 60))
	elif ((s < 172800)); then
		printf '%dh' $((s / 3600))
	else
		printf '%dd' $((s / 86400))
	fi
}

# --- the API server -----------------------------------------------------------
where="KUBECONFIG=${KUBECONFIG:-(kubectl default)}"
if ! err=$(kc --request-timeout=10s get --raw=/version 2>&1 >/dev/null </dev/null); then
	die "cannot reach the API server ($where): $(grep . <<<"$err" | tail -n 1)"
fi

# --- TeamSpaces ---------------------------------------------------------------
now=$(date -u +%s)
printf 'TeamSpaces (%s):\n' "$where"
# One line each: name|ready|reason|created|deletionTimestamp|finalizers|protected.
# None of the fields but the annotation (last, read whole) can hold a '|'.
jp='{range .items[*]}{.metadata.name}{"|"}{.status.conditions[?(@.type=="Ready")].status}{"|"}'
jp+='{.status.conditions[?(@.type=="Ready")].reason}{"|"}{.metadata.creationTimestamp}{"|"}'
jp+='{.metadata.deletionTimestamp}{"|"}{.metadata.finalizers[*]}{"|"}'
jp+='{.metadata.annotations.platform\.labhub\.io/protected}{"\n"}{end}'
if ! list=$(kc get "$TS_CRD" -o jsonpath="$jp" 2>&1); then
	if grep -q "doesn't have a resource type" <<<"$list"; then
		echo "  none: CRD $TS_CRD is not installed"
		list=""
		no_crd=1
	else
		die "listing TeamSpaces failed: $(grep . <<<"$list" | tail -n 1)"
	fi
fi
if [[ -z $list ]]; then
	[[ -n ${no_crd:-} ]] || echo "  none"
else
	declare -A ns_phase=()
	if grep -q '^[^|]*|[^|]*|[^|]*|[^|]*|[^|]' <<<"$list"; then
		# Somebody is deleting: which team namespaces exist, in which phase.
		while IFS='|' read -r ns phase; do
			ns_phase[$ns]=${phase:-Unknown}
		done < <(kc get namespaces -o jsonpath='{range .items[*]}{.metadata.name}{"|"}{.status.phase}{"\n"}{end}')
	fi
	rows=$'NAME\tREADY\tREASON\tAGE\tPROTECTED\tDELETING\n'
	total=0 deleting=0 protected=0
	while IFS='|' read -r name ready reason created deleted finalizers prot; do
		[[ -n $name ]] || continue
		total=$((total + 1))
		a=-
		if [[ -n $created ]] && c=$(date -u -d "$created" +%s 2>/dev/null); then
			a=$(age $((now > c ? now - c : 0)))
		fi
		p=no
		if [[ $prot == true ]]; then
			p=yes
			protected=$((protected + 1))
		fi
		d=-
		if [[ -n $deleted ]]; then
			deleting=$((deleting + 1))
			ns=team-$name
			if [[ -n $finalizers ]]; then
				d="since $deleted; finalizers: ${finalizers// /, }"
			else
				d="since $deleted; finalizers: none"
			fi
			if [[ -v "ns_phase[$ns]" ]]; then
				if [[ ${ns_phase[$ns]} == Terminating ]]; then
					d+="; namespace $ns Terminating"
				else
					d+="; namespace $ns exists (${ns_phase[$ns]})"
				fi
			else
				d+="; namespace $ns gone"
			fi
		fi
		rows+=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$name" "${ready:--}" "${reason:--}" "$a" "$p" "$d")$'\n'
	done <<<"$list"
	printf '%s' "$rows" | table | sed 's/^/  /'
	printf '  %s TeamSpaces, %s being deleted, %s protected\n' "$total" "$deleting" "$protected"
fi

# --- team namespaces no TeamSpace owns ------------------------------------------
unowned=$(unowned_team_namespaces kc 2>/dev/null || true)
if [[ -n $unowned ]]; then
	printf '\nteam-* namespaces no TeamSpace owns (made by hand or left over; a TeamSpace of that name says NamespaceConflict):\n'
	mapfile -t unowned_lines <<<"$unowned"
	printf '  %s\n' "${unowned_lines[@]}"
fi

# --- access in team namespaces beside the owners --------------------------------
# What spec.owners does not take away: RoleBindings other than team-owners
# (owners may bind only the namespace's ServiceAccounts, namespaces.yaml;
# older ones may bind anyone) and the ServiceAccount token Secrets, which
# outlive whoever made them (README.md, "Owners").
jp='{range .items[*]}{.metadata.namespace}{"|"}{.metadata.name}{"|"}{.roleRef.kind}{" "}{.roleRef.name}{"|"}'
jp+='{range .subjects[*]}{.kind}{" "}{.namespace}{"/"}{.name}{","}{end}{"\n"}{end}'
if access=$(kc get rolebindings --all-namespaces -o jsonpath="$jp" 2>&1); then
	access=$(awk -F'|' '$1 ~ /^team-/ && $2 != "team-owners" {
		s = $4; sub(/,$/, "", s); gsub(/ \//, " ", s); gsub(/,/, ", ", s)
		printf "%s\t%s\t%s\t%s\n", $1, $2, $3, s }' <<<"$access")
	printf '\nAccess in team namespaces beside spec.owners (RoleBindings other than team-owners):\n'
	if [[ -z $access ]]; then
		echo "  none"
	else
		printf 'NAMESPACE\tROLEBINDING\tROLE\tSUBJECTS\n%s\n' "$access" | table | sed 's/^/  /'
	fi
else
	printf '\nAccess in team namespaces beside spec.owners: cannot list RoleBindings (%s)\n' "$(grep . <<<"$access" | tail -n 1)"
fi
jp='{range .items[*]}{.metadata.namespace}{"|"}{.metadata.name}{"|"}{.metadata.annotations.kubernetes\.io/service-account\.name}{"\n"}{end}'
if tokens=$(kc get secrets --all-namespaces --field-selector=type=kubernetes.io/service-account-token -o jsonpath="$jp" 2>&1); then
	tokens=$(awk -F'|' '$1 ~ /^team-/ { printf "%s\t%s\t%s\n", $1, $2, $3 }' <<<"$tokens")
	if [[ -n $tokens ]]; then
		printf '\nServiceAccount token Secrets in team namespaces (they outlive whoever made them):\n'
		printf 'NAMESPACE\tSECRET\tSERVICEACCOUNT\n%s\n' "$tokens" | table | sed 's/^/  /'
	fi
else
	printf '\nServiceAccount token Secrets in team namespaces: cannot list Secrets (%s)\n' "$(grep . <<<"$tokens" | tail -n 1)"
fi

# --- archive ------------------------------------------------------------------
echo
"$hook_bin" archive list "${archive_flags[@]}"
