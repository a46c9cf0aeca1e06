#!/usr/bin/env bash
# A real, local Kubernetes control plane for the tests: etcd, kube-apiserver
# and kube-controller-manager on 127.0.0.1, no kubelet, no containers.
#
#   hack/cluster.sh up     build/install what is missing, start, wait until ready
#   hack/cluster.sh env    print the shell lines to use it:
#                            eval "$(hack/cluster.sh env)"   (or: export $(hack/cluster.sh env))
#   hack/cluster.sh down   stop what `up` started (by pid) and remove the state dir
#
# Environment:
#   TEAMSPACE_STATE  state dir (certs, kubeconfigs, etcd data, logs, pid files);
#                    default ${XDG_RUNTIME_DIR:-/tmp}/teamspace-cluster. A second
#                    concurrent cluster just uses another TEAMSPACE_STATE: ports
#                    are picked free at random on every `up`.
#   TEAMSPACE_CACHE  cache of the built binaries, default
#                    ${XDG_CACHE_HOME:-$HOME/.cache}/teamspace; they live in
#                    $TEAMSPACE_CACHE/k8s-<version>/bin and are built (from the
#                    hack/ Go module, honouring GOFLAGS/GOCACHE) only when missing.
#
# etcd comes from Debian's etcd-server package (apt-get) when not on PATH;
# certificates are made with openssl.
set -euo pipefail

# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STATE="${TEAMSPACE_STATE:-${XDG_RUNTIME_DIR:-/tmp}/teamspace-cluster}"
PKI="${STATE}/pki"
LOGS="${STATE}/logs"
PIDS="${STATE}/pids"
KUBECONFIG_ADMIN="${STATE}/admin.kubeconfig"
KUBECONFIG_KCM="${STATE}/controller-manager.kubeconfig"
MARKER=".teamspace-cluster"
SERVICE_CIDR="10.96.0.0/16"
SERVICE_IP="10.96.0.1"
# Start order; `down` stops them in reverse.
COMPONENTS=(etcd kube-apiserver kube-controller-manager)
# Controllers the tests rely on (garbage collector, namespace deletion,
# quota status) plus the ones that make a namespace look like a real
# cluster's (default service account, kube-root-ca.crt, aggregated roles).
KCM_CONTROLLERS="garbage-collector-controller,namespace-controller,resourcequota-controller,serviceaccount-controller,serviceaccount-token-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller"

usage() {
	sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# ---------------------------------------------------------------- processes

# alive NAME: the process recorded for NAME runs, and is ours (its command
# line names the state dir).
alive() {
	pid_owned "${PIDS}/$1.pid" "${STATE}" >/dev/null
}

any_alive() {
	local c
	for c in "${COMPONENTS[@]}"; do
		alive "${c}" && return 0
	done
	return 1
}

# start NAME BINARY ARGS...: runs it in the background in its own session,
# logging to $LOGS/NAME.log, and records its pid.
start() {
	local name="$1"
	shift
	log "starting ${name}"
	start_bg "${PIDS}/${name}.pid" "${LOGS}/${name}.log" "$@"
}

stop() {
	stop_owned "${PIDS}/$1.pid" "${STATE}" "$1" 10
}

# wait_for NAME TIMEOUT_S DESCRIPTION COMMAND...: polls COMMAND until it
# succeeds; fails early when NAME's process has exited.
wait_for() {
	local name="$1" timeout="$2" what="$3" deadline
	shift 3
	deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if ! alive "${name}"; then
			log "${name} exited; last lines of ${LOGS}/${name}.log:"
			tail -n 30 "${LOGS}/${name}.log" >&2 || true
			return 1
		fi
		if ((SECONDS >= deadline)); then
			log "${name}: ${what} not reached in ${timeout}s; last lines of ${LOGS}/${name}.log:"
			tail -n 30 "${LOGS}/${name}.log" >&2 || true
			return 1
		fi
		sleep 0.2
	done
}

# -------------------------------------------------------------------- ports

CLAIMED_PORTS=" "

# port_busy PORT: some socket on this machine uses PORT (listening or not).
port_busy() {
	local hex
	hex="$(printf ':%04X ' "$1")"
	grep -qF -- "${hex}" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# free_port sets FREE_PORT to a port no socket uses, picked at random below
# the kernel's ephemeral range so that two concurrent runs do not pick the
# same one (a run that still loses the race fails at bind and says so).
free_port() {
	local port i
	for ((i = 0; i < 200; i++)); do
		port=$((20000 + RANDOM % 12000))
		[[ "${CLAIMED_PORTS}" == *" ${port} "* ]] && continue
		port_busy "${port}" && continue
		CLAIMED_PORTS+="${port} "
		FREE_PORT="${port}"
		return 0
	done
	die "no free port found"
}

tcp_open() {
	(: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# ------------------------------------------------------------ prerequisites

ensure_etcd() {
	command -v etcd >/dev/null && return 0
	apt_install etcd-server
	command -v etcd >/dev/null || die "etcd still not on PATH after installing etcd-server"
}

ensure_openssl() {
	command -v openssl >/dev/null || apt_install openssl
}

# -------------------------------------------------------------- certificates

# issue NAME SUBJECT EXTENSIONS: an EC key and a certificate signed by the CA.
issue() {
	local name="$1" subject="$2" ext="$3"
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "${PKI}/${name}.key" -out "${PKI}/${name}.csr" -subj "${subject}" 2>/dev/null
	printf '%s\n' "${ext}" >"${PKI}/${name}.ext"
	openssl x509 -req -in "${PKI}/${name}.csr" -CA "${PKI}/ca.crt" -CAkey "${PKI}/ca.key" \
		-CAcreateserial -days 365 -sha256 -extfile "${PKI}/${name}.ext" \
		-out "${PKI}/${name}.crt" 2>/dev/null
	rm -f "${PKI}/${name}.csr" "${PKI}/${name}.ext"
}

make_pki() {
	log "generating certificates in ${PKI}"
	mkdir -p "${PKI}"
	(
		umask 077
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
			-keyout "${PKI}/ca.key" -out "${PKI}/ca.crt" -days 3650 -sha256 \
			-subj "/CN=teamspace-test-ca" \
			-addext "basicConstraints=critical,CA:TRUE" \
			-addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
		issue apiserver "/CN=kube-apiserver" "$(
			printf '%s\n' \
				"basicConstraints=critical,CA:FALSE" \
				"keyUsage=critical,digitalSignature,keyEncipherment" \
				"extendedKeyUsage=serverAuth" \
				"subjectAltName=IP:127.0.0.1,IP:${SERVICE_IP},DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
		)"
		local client
		client="$(printf '%s\n' \
			"basicConstraints=critical,CA:FALSE" \
			"keyUsage=critical,digitalSignature,keyEncipherment" \
			"extendedKeyUsage=clientAuth")"
		issue admin "/O=system:masters/CN=teamspace-admin" "${client}"
		# With --use-service-account-credentials=false every controller acts
		# as this identity; system:masters lets the garbage collector and the
		# namespace controller delete any kind, custom resources included.
		issue controller-manager "/O=system:masters/CN=system:kube-controller-manager" "${client}"
		# Its serving certificate, so that its /healthz can be checked with
		# kubectl and our CA.
		issue controller-manager-serving "/CN=kube-controller-manager" "$(
			printf '%s\n' \
				"basicConstraints=critical,CA:FALSE" \
				"keyUsage=critical,digitalSignature,keyEncipherment" \
				"extendedKeyUsage=serverAuth" \
				"subjectAltName=IP:127.0.0.1,DNS:localhost"
		)"
		openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "${PKI}/sa.key" 2>/dev/null
		openssl pkey -in "${PKI}/sa.key" -pubout -out "${PKI}/sa.pub" 2>/dev/null
	)
}

# write_kubeconfig FILE USER: a kubeconfig for the API server with USER's
# client certificate, everything embedded.
write_kubeconfig() {
	local file="$1" user="$2"
	(
		umask 077
		cat >"${file}" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: teamspace
  cluster:
    server: https://127.0.0.1:${APISERVER_PORT}
    certificate-authority-data: $(base64 -w0 <"${PKI}/ca.crt")
users:
- name: ${user}
  user:
    client-certificate-data: $(base64 -w0 <"${PKI}/${user}.crt")
    client-key-data: $(base64 -w0 <"${PKI}/${user}.key")
contexts:
- name: teamspace
  context:
    cluster: teamspace
    user: ${user}
current-context: teamspace
EOF
	)
}

# --------------------------------------------------------------- components

kubectl_admin() {
	"${KUBE_BIN_DIR}/kubectl" --kubeconfig="${KUBECONFIG_ADMIN}" --request-timeout=5s "$@"
}

apiserver_ready() {
	[[ "$(kubectl_admin get --raw=/readyz 2>/dev/null)" == ok ]]
}

controller_manager_healthy() {
	[[ "$(kubectl_admin --server="https://127.0.0.1:${KCM_PORT}" get --raw=/healthz 2>/dev/null)" == ok ]]
}

etcd_healthy() {
	tcp_open "${ETCD_PORT}" || return 1
	local reply
	reply="$(
		exec 3<>"/dev/tcp/127.0.0.1/${ETCD_PORT}"
		printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		timeout 5 cat <&3
	)" || return 1
	[[ "${reply}" == *'"health":"true"'* ]]
}

# run_with_port_retry START_FUNCTION NAME: starts a component, retrying with
# new ports when another process took one of them first. (START_FUNCTION runs
# where `set -e` does not apply: it returns non-zero itself on failure.)
run_with_port_retry() {
	local fn="$1" name="$2" i
	for ((i = 1; i <= 3; i++)); do
		"${fn}" && return 0
		stop "${name}"
		grep -q 'address already in use' "${LOGS}/${name}.log" 2>/dev/null || return 1
		log "${name}: port taken meanwhile; retrying with other ports"
	done
	return 1
}

start_etcd() {
	free_port && ETCD_PORT="${FREE_PORT}"
	free_port && ETCD_PEER_PORT="${FREE_PORT}"
	rm -rf "${STATE}/etcd"
	local extra=()
	# Throwaway data: skip fsync when this etcd knows how (3.5+).
	if etcd --help 2>&1 | grep -- '--unsafe-no-fsync' >/dev/null; then
		extra+=(--unsafe-no-fsync)
	fi
	start etcd etcd \
		--name=teamspace \
		--data-dir="${STATE}/etcd" \
		--listen-client-urls="http://127.0.0.1:${ETCD_PORT}" \
		--advertise-client-urls="http://127.0.0.1:${ETCD_PORT}" \
		--listen-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-advertise-peer-urls="http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-cluster="teamspace=http://127.0.0.1:${ETCD_PEER_PORT}" \
		--initial-cluster-state=new \
		--logger=zap --log-level=warn \
		"${extra[@]}"
	wait_for etcd 30 "health" etcd_healthy || return 1
}

start_apiserver() {
	free_port && APISERVER_PORT="${FREE_PORT}"
	write_kubeconfig "${KUBECONFIG_ADMIN}" admin || return 1
	write_kubeconfig "${KUBECONFIG_KCM}" controller-manager || return 1
	start kube-apiserver "${KUBE_BIN_DIR}/kube-apiserver" \
		--bind-address=127.0.0.1 \
		--advertise-address=127.0.0.1 \
		--secure-port="${APISERVER_PORT}" \
		--etcd-servers="http://127.0.0.1:${ETCD_PORT}" \
		--tls-cert-file="${PKI}/apiserver.crt" \
		--tls-private-key-file="${PKI}/apiserver.key" \
		--client-ca-file="${PKI}/ca.crt" \
		--authorization-mode=RBAC \
		--service-cluster-ip-range="${SERVICE_CIDR}" \
		--service-account-issuer=https://kubernetes.default.svc.cluster.local \
		--api-audiences=https://kubernetes.default.svc.cluster.local \
		--service-account-key-file="${PKI}/sa.pub" \
		--service-account-signing-key-file="${PKI}/sa.key" \
		--endpoint-reconciler-type=none \
		--profiling=false
	wait_for kube-apiserver 120 "/readyz ok" apiserver_ready || return 1
}

start_controller_manager() {
	free_port && KCM_PORT="${FREE_PORT}"
	start kube-controller-manager "${KUBE_BIN_DIR}/kube-controller-manager" \
		--kubeconfig="${KUBECONFIG_KCM}" \
		--authentication-kubeconfig="${KUBECONFIG_KCM}" \
		--authorization-kubeconfig="${KUBECONFIG_KCM}" \
		--bind-address=127.0.0.1 \
		--secure-port="${KCM_PORT}" \
		--tls-cert-file="${PKI}/controller-manager-serving.crt" \
		--tls-private-key-file="${PKI}/controller-manager-serving.key" \
		--leader-elect=false \
		--controllers="${KCM_CONTROLLERS}" \
		--use-service-account-credentials=false \
		--service-account-private-key-file="${PKI}/sa.key" \
		--root-ca-file="${PKI}/ca.crt" \
		--cluster-name=teamspace \
		--profiling=false
	wait_for kube-controller-manager 60 "/healthz ok" controller_manager_healthy || return 1
	# The controllers act, not just answer: the default service account of
	# the default namespace appears.
	wait_for kube-controller-manager 60 "default service account" \
		kubectl_admin get serviceaccount default --namespace=default
}

# ----------------------------------------------------------------- commands

print_env() {
	local path="${PATH}"
	[[ ":${path}:" == *":${KUBE_BIN_DIR}:"* ]] || path="${KUBE_BIN_DIR}:${path}"
	printf 'export KUBECONFIG=%q\n' "${KUBECONFIG_ADMIN}"
	printf 'export PATH=%q\n' "${path}"
	printf 'export TEAMSPACE_STATE=%q\n' "${STATE}"
}

cmd_env() {
	[[ -f "${KUBECONFIG_ADMIN}" ]] || die "no cluster in ${STATE}: run hack/cluster.sh up (with the same TEAMSPACE_STATE)"
	print_env
}

# remove_state removes the state dir, but only one that `up` made (it holds
# the marker file) or an empty one: TEAMSPACE_STATE set to a wrong directory
# must never cost its contents.
remove_state() {
	[[ -e "${STATE}" ]] || return 0
	if [[ -f "${STATE}/${MARKER}" ]]; then
		rm -rf "${STATE}"
	elif ! rmdir "${STATE}" 2>/dev/null; then
		die "${STATE} is not a cluster state dir (no ${MARKER}) and not empty; not removing it"
	fi
}

cmd_down() {
	local i
	for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do
		stop "${COMPONENTS[i]}"
	done
	remove_state
	log "cluster in ${STATE} is down"
}

UP_DONE=false

up_cleanup() {
	"${UP_DONE}" && return 0
	log "bringing the cluster up failed; logs were in ${LOGS}; stopping what started"
	cmd_down
}

cmd_up() {
	if [[ -d "${PIDS}" ]] && any_alive; then
		# shellcheck source=/dev/null
		source "${STATE}/ports.env" 2>/dev/null || true
		if [[ -n "${APISERVER_PORT:-}" ]] && apiserver_ready; then
			log "cluster in ${STATE} is already up"
			printf 'export KUBECONFIG=%q\n' "${KUBECONFIG_ADMIN}"
			return 0
		fi
		die "a cluster in ${STATE} runs but is not ready: run hack/cluster.sh down first"
	fi
	ensure_kube_binaries
	ensure_etcd
	ensure_openssl

	local start="${SECONDS}"
	remove_state
	mkdir -p "${STATE}"
	touch "${STATE}/${MARKER}"
	mkdir -p "${LOGS}" "${PIDS}"
	trap up_cleanup EXIT
	make_pki
	run_with_port_retry start_etcd etcd
	run_with_port_retry start_apiserver kube-apiserver
	run_with_port_retry start_controller_manager kube-controller-manager
	printf 'ETCD_PORT=%s\nAPISERVER_PORT=%s\nKCM_PORT=%s\n' \
		"${ETCD_PORT}" "${APISERVER_PORT}" "${KCM_PORT}" >"${STATE}/ports.env"
	UP_DONE=true
	trap - EXIT
	log "cluster up in $((SECONDS - start))s: API server https://127.0.0.1:${APISERVER_PORT}, state in ${STATE}, logs in ${LOGS}"
	printf 'export KUBECONFIG=%q\n' "${KUBECONFIG_ADMIN}"
}

main() {
	[[ $# -eq 1 ]] || usage
	case "$1" in
	up) cmd_up ;;
	down) cmd_down ;;
	env) cmd_env ;;
	*) usage ;;
	esac
}

main "$@"
