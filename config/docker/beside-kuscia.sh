#!/bin/sh
# Runs kuscia-host's image beside a Kuscia container in Docker (an autonomy domain: its own K3s,
# each party its own: p2p). kuscia-host joins the Kuscia container's network namespace, so that
# Kuscia's API server (https://127.0.0.1:6443, its kubeconfig <root>/etc/kubeconfig) and Envoy's
# admin API (http://127.0.0.1:10000, for gateway-ready-time) are on its loopback, as they are for
# Kuscia itself. Its config and the kubeconfig go to ./kuscia-host-<domain>/; its history to the
# volume kuscia-host-<domain>-history.
#
#   config/docker/beside-kuscia.sh DOMAIN [IMAGE] [KUSCIA_CONTAINER]
#
# IMAGE defaults to registry.example.com/kuscia-host:0.1.0 (load yours: `docker load -i
# kuscia-host-<version>.oci.tar`, then tag it); KUSCIA_CONTAINER to kuscia-autonomy-DOMAIN.
# DOCKER (default docker) names the client: podman works too. Then:
#   docker exec kuscia-autonomy-DOMAIN curl -s http://127.0.0.1:9465/metrics   # its metrics
#   docker logs kuscia-host-DOMAIN
set -eu

domain=${1:?usage: beside-kuscia.sh DOMAIN [IMAGE] [KUSCIA_CONTAINER]}
image=${2:-registry.example.com/kuscia-host:0.1.0}
kuscia=${3:-kuscia-autonomy-$domain}
docker=${DOCKER:-docker}
dir=$(pwd)/kuscia-host-$domain

"$docker" inspect --format '{{.State.Running}}' "$kuscia" | grep -q true ||
  { echo "beside-kuscia: the container $kuscia is not running" >&2; exit 1; }
# Kuscia's root: KUSCIA_HOME in the container, else /home/kuscia.
root=$("$docker" exec "$kuscia" printenv KUSCIA_HOME 2>/dev/null || true)
root=${root:-/home/kuscia}
mkdir -p "$dir"
"$docker" cp "$kuscia:$root/etc/kubeconfig" "$dir/kubeconfig"
chmod 0644 "$dir/kubeconfig"
cat >"$dir/kuscia-host.yaml" <<YAML
# kuscia-host beside $kuscia (written by config/docker/beside-kuscia.sh).
mode: p2p
logFormat: json
admin:
  listen: 127.0.0.1:9464
  metricsListen: 127.0.0.1:9465
cluster:
  kubeconfig: /etc/kuscia-host/kubeconfig
domains:
  - id: $domain
    plugins:
      - name: task-timeline
      - name: gateway-ready-time
        config: { envoyAdminUrl: "http://127.0.0.1:10000" }
      - name: scheduler-time
      - name: task-history
        config: { database: /var/lib/kuscia-host/history.db }
YAML
"$docker" rm --force "kuscia-host-$domain" >/dev/null 2>&1 || true
"$docker" run --detach --name "kuscia-host-$domain" --restart unless-stopped \
  --network "container:$kuscia" \
  --volume "$dir:/etc/kuscia-host:ro" \
  --volume "kuscia-host-$domain-history:/var/lib/kuscia-host" \
  "$image"
echo "kuscia-host-$domain runs beside $kuscia: its config in $dir/kuscia-host.yaml"
