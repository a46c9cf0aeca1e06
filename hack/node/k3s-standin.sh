#!/usr/bin/env bash
# k3s-standin: what k3s.service is on a real k3s server node, for the
# TeamSpace test node of hack/node.sh: kine on SQLite under /var/lib/rancher,
# kube-apiserver and kube-controller-manager, all on 127.0.0.1, in one
# service. First start generates the PKI and the admin kubeconfig
# /etc/rancher/k3s/k3s.yaml, as k3s does; later starts reuse them.
set -euo pipefail
bin=/opt/k8s/bin
server=/var/lib/rancher/k3s/server
pki=$server/tls
mkdir -p "$server/db" "$pki" /etc/rancher/k3s

issue() { # NAME SUBJECT EXTENSIONS
	openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/$1.key" -out "$pki/$1.csr" -subj "$2" 2>/dev/null
	printf '%s\n' "$3" >"$pki/$1.ext"
	openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
		-days 365 -sha256 -extfile "$pki/$1.ext" -out "$pki/$1.crt" 2>/dev/null
	rm -f "$pki/$1.csr" "$pki/$1.ext"
}
kubeconfig() { # FILE USER
	cat >"$1" <<KC
apiVersion: v1
kind: Config
clusters:
- name: default
  cluster:
    server: https://127.0.0.1:6443
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$2.crt")
    client-key-data: $(base64 -w0 <"$pki/$2.key")
contexts:
- name: default
  context: {cluster: default, user: $2}
current-context: default
KC
}
if [[ ! -s $pki/sa.pub ]]; then
	umask 077
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$pki/ca.key" -out "$pki/ca.crt" -days 3650 -sha256 -subj /CN=k3s-standin-ca \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
	client=$'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth'
	issue apiserver /CN=kube-apiserver $'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,IP:10.43.0.1,DNS:localhost,DNS:kubernetes.default.svc'
	issue admin /O=system:masters/CN=system:admin "$client"
	issue controller /O=system:masters/CN=system:kube-controller-manager "$client"
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/sa.key" 2>/dev/null
	openssl pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub" 2>/dev/null
	kubeconfig "$server/controller.kubeconfig" controller
	kubeconfig /etc/rancher/k3s/k3s.yaml.new admin
	chmod 0600 /etc/rancher/k3s/k3s.yaml.new
	mv /etc/rancher/k3s/k3s.yaml.new /etc/rancher/k3s/k3s.yaml
	umask 022
fi

/opt/kine/bin/kine --listen-address=127.0.0.1:2379 --metrics-bind-address=0 \
	--endpoint="sqlite://$server/db/state.db?_journal=WAL&cache=shared&_busy_timeout=30000" &
for ((i = 0; i < 100; i++)); do
	(exec 3<>/dev/tcp/127.0.0.1/2379) 2>/dev/null && break
	sleep 0.1
done
# As k3s runs them: privileged pods allowed by the API server (Pod Security
# decides per namespace), every default controller on plus the token cleaner.
"$bin/kube-apiserver" --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=6443 \
	--etcd-servers=http://127.0.0.1:2379 --storage-media-type=application/json \
	--tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
	--client-ca-file="$pki/ca.crt" --authorization-mode=Node,RBAC --allow-privileged=true \
	--service-cluster-ip-range=10.43.0.0/16 \
	--service-account-issuer=https://kubernetes.default.svc.cluster.local \
	--api-audiences=https://kubernetes.default.svc.cluster.local \
	--service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
	--endpoint-reconciler-type=none --profiling=false &
"$bin/kube-controller-manager" --kubeconfig="$server/controller.kubeconfig" \
	--bind-address=127.0.0.1 --secure-port=10257 --leader-elect=false \
	--controllers='*,tokencleaner' \
	--use-service-account-credentials=false --service-account-private-key-file="$pki/sa.key" \
	--root-ca-file="$pki/ca.crt" --cluster-name=k3s-standin --profiling=false &
# One service: when any part exits, the whole unit fails and systemd
# restarts it (Restart=always), as it would restart k3s.
wait -n
exit 1
