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
#                    the object's name in the folder).
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
#                        read the records from the hook's bucket instead (the
#                        hook's flags, same values; needs curl 7.75+ for SigV4;
#                        a CA file replaces the system's roots for curl)
#   --kubeconfig FILE    kubeconfig to use (default $KUBECONFIG, else
#                        /etc/rancher/k3s/k3s.yaml when readable, else kubectl's
#                        own default)
#   -h, --help
# Environment: KUBECONFIG, TEAMSPACE_ARCHIVE_DIR (as --archive-dir; hack/up.sh
# sets it), DESTDIR, KUBECTL.
# Exits 1 with a one-line error when the API server cannot be reached.
set -euo pipefail
export LC_ALL=C
prog=status.sh
# shellcheck source=hack/deploy/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

archive_dir=${TEAMSPACE_ARCHIVE_DIR:-}
kubeconfig=""
s3_endpoint="" s3_bucket="" s3_folder="" s3_region="" s3_access_file="" s3_secret_file="" s3_ca_file=""
while (($# > 0)); do
	case $1 in
	--archive-dir=*) archive_dir=${1#*=} ;;
	--archive-dir)
		(($# > 1)) || die "--archive-dir wants a directory"
		archive_dir=$2
		shift
		;;
	--archive-s3-endpoint=*) s3_endpoint=${1#*=} ;;
	--archive-s3-bucket=*) s3_bucket=${1#*=} ;;
	--archive-s3-folder=*) s3_folder=${1#*=} ;;
	--archive-s3-region=*) s3_region=${1#*=} ;;
	--archive-s3-access-key-file=*) s3_access_file=${1#*=} ;;
	--archive-s3-secret-key-file=*) s3_secret_file=${1#*=} ;;
	--archive-s3-ca-file=*) s3_ca_file=${1#*=} ;;
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
if [[ -n $s3_endpoint ]]; then
	[[ $s3_endpoint =~ ^https?://[^/]+/?$ ]] || die "--archive-s3-endpoint $s3_endpoint: want a URL https://host[:port]"
	[[ -n $s3_bucket ]] || die "--archive-s3-bucket is required with --archive-s3-endpoint"
	for f in "$s3_access_file" "$s3_secret_file"; do
		[[ -n $f && -r $f && -s $f ]] || die "--archive-s3-access-key-file and --archive-s3-secret-key-file must name readable, non-empty files ('$f')"
	done
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
# json_string FILE KEY prints the string value of KEY in the flat JSON object
# the hook writes (encoding/json: no escapes in names, uids or timestamps).
json_string() {
	{ tr -d '\n\r' <"$1" | grep -o "\"$2\"[[:space:]]*:[[:space:]]*\"[^\"\\\\]*\"" || true; } |
		head -n 1 | sed 's/^.*:[[:space:]]*"\(.*\)"$/\1/'
}
# is_object FILE: the file is one JSON object (starts with '{', ends with '}').
is_object() {
	local body
	body=$(tr -d ' \t\n\r' <"$1") || return 1
	[[ $body == \{*\} ]]
}
# s3_get PATH OUT: a GET of the bucket's PATH into OUT, signed with SigV4 by
# curl (the keys through its config on stdin, never on the command line).
# S3 wants the payload's SHA-256 in a signed header: a GET's is that of
# nothing.
empty_sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
s3_get() {
	local -a ca=()
	[[ -z $s3_ca_file ]] || ca=(--cacert "$s3_ca_file")
	printf 'user = "%s:%s"\n' "$(tr -d '\r\n' <"$s3_access_file")" "$(tr -d '\r\n' <"$s3_secret_file")" |
		curl -fsS --max-time 20 -K - "${ca[@]}" --aws-sigv4 "aws:amz:${s3_region:-us-east-1}:s3" \
			-H "x-amz-content-sha256: $empty_sha256" \
			-o "$2" "${s3_endpoint%/}/$s3_bucket$1"
}
# s3_fetch DIR: every record object of the folder into DIR (the listing
# followed through its continuation tokens); fails with curl's error.
s3_fetch() {
	local dir=$1 prefix="" token="" query key
	[[ -z $s3_folder ]] || prefix="${s3_folder%/}/"
	while :; do
		# SigV4 signs the query URL-encoded: a "/" in a value must be %2F.
		query="?list-type=2&prefix=${prefix//\//%2F}"
		[[ -z $token ]] || query+="&continuation-token=$(sed 's/+/%2B/g; s#/#%2F#g; s/=/%3D/g' <<<"$token")"
		s3_get "$query" "$dir/.list" || return 1
		# One line per object: its key and when it was last modified (the
		# time a non-record is listed with, as a file's mtime).
		while read -r key modified; do
			[[ $key == *.json && ${key#"$prefix"} != */* ]] || continue
			s3_get "/$key" "$dir/${key##*/}" || return 1
			[[ -z $modified ]] || touch -d "$modified" "$dir/${key##*/}"
		done < <(sed 's#</Contents>#\n#g' "$dir/.list" | sed -n 's#.*<Key>\([^<]*\)</Key>.*#&\t\1#p' |
			sed 's#^.*<LastModified>\([^<]*\)</LastModified>.*\t\(.*\)$#\2 \1#; t; s#^.*\t##')
		token=$(grep -o '<NextContinuationToken>[^<]*' "$dir/.list" | sed 's#<NextContinuationToken>##' || true)
		[[ -n $token ]] || break
	done
	rm -f "$dir/.list"
}
if [[ -n $s3_endpoint ]]; then
	bucket_label="bucket $s3_bucket${s3_folder:+/${s3_folder%/}} at $s3_endpoint"
	archive_dir=$(mktemp -d)
	trap 'rm -rf "$archive_dir"' EXIT
	if ! s3_fetch "$archive_dir" 2>"$archive_dir/.err"; then
		printf 'Archive records (%s):\n  cannot read the bucket: %s\n' "$bucket_label" "$(tr '\n' ' ' <"$archive_dir/.err")"
		exit 0
	fi
	rm -f "$archive_dir/.err"
	printf 'Archive records (%s):\n' "$bucket_label"
else
	printf 'Archive records (%s):\n' "$archive_dir"
fi
if [[ -n $s3_endpoint ]]; then
	: # fetched above
elif [[ ! -e $archive_dir ]]; then
	echo "  none: $archive_dir does not exist (no TeamSpace archived here yet, or not the hook's --archive-dir)"
elif [[ ! -d $archive_dir ]]; then
	echo "  none: $archive_dir is not a directory"
elif [[ ! -r $archive_dir || ! -x $archive_dir ]]; then
	echo "  cannot read $archive_dir (permission denied: run as root or as the hook's user)"
fi
if [[ -d $archive_dir && -r $archive_dir && -x $archive_dir ]]; then
	shopt -s nullglob
	files=("$archive_dir"/*.json)
	shopt -u nullglob
	if ((${#files[@]} == 0)); then
		echo "  none: ${bucket_label:-$archive_dir} holds no records"
	else
		unreadable=0
		rows=""
		for f in "${files[@]}"; do
			base=${f##*/}
			mtime=$(date -u -r "$f" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo "?")
			name="" uid="" at=""
			if [[ -f $f && -r $f ]] && is_object "$f"; then
				uid=$(json_string "$f" uid)
				name=$(json_string "$f" name)
				at=$(json_string "$f" deletionTimestamp)
			fi
			# Sort key first (the time), cut off before printing.
			if [[ -z $uid ]]; then
				unreadable=$((unreadable + 1))
				rows+=$(printf '%s\t%s\t%s\t%s\t%s (file mtime)' "$mtime" "${base%%.*}" "(unreadable)" "$base" "$mtime")$'\n'
			elif [[ -n $at ]]; then
				rows+=$(printf '%s\t%s\t%s\t%s\t%s' "$at" "${name:-${base%%.*}}" "$uid" "$base" "$at")$'\n'
			else
				rows+=$(printf '%s\t%s\t%s\t%s\t%s (file mtime)' "$mtime" "${name:-${base%%.*}}" "$uid" "$base" "$mtime")$'\n'
			fi
		done
		{
			printf 'NAME\tUID\tFILE\tDELETED AT\n'
			printf '%s' "$rows" | sort -t $'\t' -k1,1 -k4,4 | cut -f2-
		} | table | sed 's/^/  /'
		n=${#files[@]}
		printf '  %s record%s' "$n" "$( ((n == 1)) || echo s)"
		((unreadable == 0)) || printf ', %s unreadable (not a TeamSpace record)' "$unreadable"
		printf '\n'
	fi
fi
