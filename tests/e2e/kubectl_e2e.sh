#!/usr/bin/env bash
# End to end with the real kubectl against `kuscia-host apiserver`: apply, get (short name kt),
# describe, status merge patch with pruning, strategic-merge re-apply, label, field selector,
# get -w, get --raw, a Secret and a Lease, create -f of a List, delete. With --tls the server uses generated
# certificates and a token, and also accepts client certificates from a CA given with --client-ca.
# usage: kubectl_e2e.sh <kuscia-host> <fixtures-dir> [--tls]
set -euo pipefail
host=$1
fixtures=$2
tls=${3:-}
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
expect() { # expect <description> <pattern> <command...>
  local what=$1 pattern=$2
  shift 2
  local out
  out=$("$@" 2>&1) || fail "$what: command failed: $* -> $out"
  grep -qE -- "$pattern" <<<"$out" || fail "$what: expected /$pattern/ in: $out"
  echo "ok - $what"
}

command -v kubectl >/dev/null || fail "kubectl is not installed (these machines ship it as /usr/bin/kubectl)"
clientca=()
if [ -n "$tls" ]; then
  # A client CA and a user certificate it signs, made here with the openssl tool.
  ossl() { openssl "$@" 2>"$work/openssl.err" || fail "openssl $1: $(cat "$work/openssl.err")"; }
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
    -subj /CN=e2e-client-ca -keyout "$work/client-ca.key" -out "$work/client-ca.pem"
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=e2e-user \
    -keyout "$work/user.key" -out "$work/user.csr"
  ossl x509 -req -days 1 -in "$work/user.csr" -CA "$work/client-ca.pem" -CAkey "$work/client-ca.key" \
    -CAcreateserial -out "$work/user.pem"
  clientca=(--client-ca "$work/client-ca.pem")
fi
"$host" apiserver --listen 127.0.0.1:0 --kubeconfig-out "$work/kubeconfig" $tls "${clientca[@]}" \
  >"$work/server.out" 2>"$work/server.err" &
pids+=($!)
for _ in $(seq 1 100); do grep -q "listening on" "$work/server.out" 2>/dev/null && break; sleep 0.1; done
grep -q "listening on" "$work/server.out" || fail "apiserver did not start: $(cat "$work/server.err")"
url=$(sed -n 's/^apiserver listening on //p' "$work/server.out")
k=(kubectl --kubeconfig "$work/kubeconfig" --cache-dir "$work/cache")
# The fixtures are objects as a server returned them; a manifest a user applies has no
# server-owned fields (a stale resourceVersion in it would rightly get 409 Conflict).
manifest() {
  python3 -c 'import json, sys
o = json.load(open(sys.argv[1]))
for k in ("resourceVersion", "uid", "creationTimestamp", "generation"):
    o["metadata"].pop(k, None)
o.pop("status", None)
print(json.dumps(o, indent=1))' "$1"
}
manifest "$fixtures/kusciatask.json" >"$work/task.json"
manifest "$fixtures/pod.json" >"$work/pod.json"

expect "server version" 'Server Version: v1\.30' "${k[@]}" version
if [ -n "$tls" ]; then
  code=$(curl -s -o /dev/null -w '%{http_code}' -k "$url/api/v1/pods")
  [ "$code" = 401 ] || fail "anonymous request over TLS answered $code, want 401"
  echo "ok - TLS requires the bearer token"
  code=$(curl -s -o /dev/null -w '%{http_code}' -k --cert "$work/user.pem" --key "$work/user.key" \
    "$url/api/v1/pods")
  [ "$code" = 200 ] || fail "request with a client certificate answered $code, want 200"
  # kubectl with the certificate instead of the token.
  sed "s|^    token: .*|    client-certificate: $work/user.pem\n    client-key: $work/user.key|" \
    "$work/kubeconfig" >"$work/kubeconfig-cert"
  ! grep -q 'token:' "$work/kubeconfig-cert" || fail "kubeconfig-cert still has the token"
  expect "kubectl with a client certificate (--client-ca)" '^default ' \
    kubectl --kubeconfig "$work/kubeconfig-cert" --cache-dir "$work/cache" get namespaces
fi
expect "create namespaces" 'namespace/cross-domain created' "${k[@]}" create namespace cross-domain
"${k[@]}" create namespace alice >/dev/null
expect "apply KusciaTask" 'kusciatask.kuscia.secretflow/secretflow-task-psi created' \
  "${k[@]}" apply -f "$work/task.json"
expect "get kt" '^secretflow-task-psi ' "${k[@]}" get kt -n cross-domain
expect "get kusciatasks -A" 'cross-domain +secretflow-task-psi' "${k[@]}" get kusciatasks -A
expect "re-apply is unchanged" 'unchanged' "${k[@]}" apply -f "$work/task.json"
expect "status merge patch" 'patched' "${k[@]}" patch kt secretflow-task-psi -n cross-domain \
  --subresource=status --type=merge \
  -p '{"status":{"phase":"Running","undeclaredField":"x","podStatuses":{"alice/secretflow-task-psi-0":{"namespace":"alice","podName":"secretflow-task-psi-0","podPhase":"Running","readyTime":"2024-05-20T08:00:09Z"}}}}'
yaml=$("${k[@]}" get kt secretflow-task-psi -n cross-domain -o yaml)
grep -q 'phase: Running' <<<"$yaml" || fail "status patch not visible in -o yaml: $yaml"
grep -q 'readyTime: "2024-05-20T08:00:09Z"' <<<"$yaml" || fail "readyTime not visible in -o yaml: $yaml"
! grep -q 'undeclaredField' <<<"$yaml" || fail "undeclared status field was not pruned: $yaml"
echo "ok - status patch shows in -o yaml, undeclared field pruned"
expect "describe" 'Name: +secretflow-task-psi' "${k[@]}" describe kt secretflow-task-psi -n cross-domain
expect "get --raw" '"name":"pods/status"' "${k[@]}" get --raw /api/v1

"${k[@]}" get pods -n alice -w --output-watch-events >"$work/watch.out" 2>&1 &
pids+=($!)
sleep 1
expect "apply pod" 'pod/secretflow-task-psi-0 created' "${k[@]}" apply -f "$work/pod.json"
sed 's/"containerPort": 8081/"containerPort": 8082/' "$work/pod.json" >"$work/pod2.json"
expect "re-apply pod (strategic merge)" 'configured' "${k[@]}" apply -f "$work/pod2.json"
ports=$("${k[@]}" get pod secretflow-task-psi-0 -n alice -o jsonpath='{.spec.containers[0].ports[*].containerPort}')
[ "$ports" = "54509 8080 8082" ] || fail "strategic merge apply lost or kept ports: $ports"
echo "ok - strategic merge keeps list items by merge key ($ports)"
expect "label" 'labeled' "${k[@]}" label pod secretflow-task-psi-0 -n alice e2e=yes
expect "label selector" 'secretflow-task-psi-0' "${k[@]}" get pods -n alice -l e2e=yes
expect "field selector" 'secretflow-task-psi-0' "${k[@]}" get pods -A --field-selector metadata.name=secretflow-task-psi-0
expect "delete pod" 'deleted' "${k[@]}" delete pod secretflow-task-psi-0 -n alice
for _ in $(seq 1 50); do grep -q DELETED "$work/watch.out" && break; sleep 0.1; done
for ev in ADDED MODIFIED DELETED; do
  grep -q "^$ev " "$work/watch.out" || fail "get -w printed no $ev event: $(cat "$work/watch.out")"
done
echo "ok - get -w printed ADDED, MODIFIED and DELETED"
# The Secrets the shipped Deployment mounts, and the Leases of a leader election.
cat >"$work/secret.json" <<'JSON'
{"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "data": {"password": "c2VjcmV0"},
 "metadata": {"name": "history-password", "namespace": "alice"}}
JSON
expect "apply secret" 'secret/history-password created' "${k[@]}" apply -f "$work/secret.json"
expect "get secret" 'c2VjcmV0' "${k[@]}" get secret history-password -n alice -o jsonpath='{.data.password}'
cat >"$work/lease.json" <<'JSON'
{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
 "metadata": {"name": "kuscia-host", "namespace": "alice"},
 "spec": {"holderIdentity": "pod-a", "leaseDurationSeconds": 15}}
JSON
expect "apply lease" 'lease.coordination.k8s.io/kuscia-host created' "${k[@]}" apply -f "$work/lease.json"
expect "get leases" '^kuscia-host ' "${k[@]}" get leases -n alice
# A `kind: List` (kubectl validates it through the OpenAPI v2 document, asked for as protobuf).
cat >"$work/list.yaml" <<'YAML'
apiVersion: v1
kind: List
items:
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: list-a, namespace: alice}, data: {x: "1"}}
  - {apiVersion: v1, kind: ConfigMap, metadata: {name: list-b, namespace: alice}}
YAML
expect "create -f of a List" 'configmap/list-b created' "${k[@]}" create -f "$work/list.yaml"
expect "the List's items" '^list-a ' "${k[@]}" get configmaps -n alice
expect "delete kt" 'deleted' "${k[@]}" delete kt secretflow-task-psi -n cross-domain
expect "gone" 'No resources found' "${k[@]}" get kt -n cross-domain
echo "kubectl e2e passed${tls:+ (TLS)}"
