#!/usr/bin/env bash
# containerd as a peer of rudder's runtime, for benchmarks and for running
# rudder's kubelet on another CRI runtime: Debian's containerd (1.6) with a
# private config, run as a child of this script, never as the host's
# service.
#
#   sudo scripts/containerd-peer.sh start [DIR]   # prints the CRI socket (unix://DIR/containerd.sock)
#   sudo scripts/containerd-peer.sh stop [DIR]    # removes its pods, stops it, deletes DIR
#
# DIR (default /tmp/containerd-peer) holds everything: config.toml, root
# and state dirs, the socket, logs, CNI config and IPAM data. containerd
# runs in a network namespace of its own (unshare --net): its CNI bridge,
# veths and pod addresses (10.88.0.0/16) live there, so nothing on the
# host's network changes. The CRI plugin uses the overlayfs snapshotter,
# restrict_oom_score_adj = true (this host refuses negative
# oom_score_adj) and a pause image built by scripts/testimages, imported
# with the busybox test image into the k8s.io namespace.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd=${1:-}
DIR=${2:-/tmp/containerd-peer}
SOCK=$DIR/containerd.sock
PAUSE_IMAGE=registry.k8s.io/pause:3.9

need_root() {
  [ "$(id -u)" = 0 ] || { echo "containerd-peer.sh: needs root" >&2; exit 1; }
}

start() {
  need_root
  for t in containerd containerd-shim-runc-v2 ctr runc unshare; do
    command -v "$t" >/dev/null 2>&1 || { echo "containerd-peer.sh: $t is missing (apt-get install containerd containernetworking-plugins)" >&2; exit 1; }
  done
  [ -x /usr/lib/cni/bridge ] || { echo "containerd-peer.sh: /usr/lib/cni/bridge is missing (apt-get install containernetworking-plugins)" >&2; exit 1; }
  if [ -f "$DIR/containerd.pid" ] && kill -0 "$(cat "$DIR/containerd.pid")" 2>/dev/null; then
    echo "unix://$SOCK"
    return
  fi
  mkdir -p "$DIR/net.d" "$DIR/ipam"
  cat >"$DIR/config.toml" <<EOF
version = 2
root = "$DIR/root"
state = "$DIR/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper"]

[grpc]
  address = "$SOCK"

[ttrpc]
  address = "$SOCK.ttrpc"

[plugins."io.containerd.internal.v1.opt"]
  path = "$DIR/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "$PAUSE_IMAGE"
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$DIR/net.d"
EOF
  cat >"$DIR/net.d/10-peer.conflist" <<EOF
{
  "cniVersion": "1.0.0",
  "name": "peer",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": false,
      "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]], "dataDir": "$DIR/ipam"}
    }
  ]
}
EOF
  if [ ! -f "$DIR/images.tar" ]; then
    CGO_ENABLED=0 go build -o "$DIR/testimages" ./scripts/testimages
    "$DIR/testimages" archive --out "$DIR/images.tar"
  fi
  # setsid: containerd outlives this script (stop ends it by its pid).
  setsid unshare --net containerd --config "$DIR/config.toml" >"$DIR/containerd.log" 2>&1 < /dev/null &
  echo $! >"$DIR/containerd.pid"
  for _ in $(seq 1 300); do [ -S "$SOCK" ] && break; sleep 0.1; done
  [ -S "$SOCK" ] || { echo "containerd-peer.sh: containerd did not start:"; tail -20 "$DIR/containerd.log"; exit 1; } >&2
  ctr --address "$SOCK" -n k8s.io images import "$DIR/images.tar" >"$DIR/import.log"
  ctr --address "$SOCK" -n k8s.io images label "$PAUSE_IMAGE" io.cri-containerd.pinned=pinned >/dev/null
  echo "unix://$SOCK"
}

stop() {
  need_root
  [ -d "$DIR" ] || return 0
  local pid=""
  [ -f "$DIR/containerd.pid" ] && pid=$(cat "$DIR/containerd.pid")
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ -S "$SOCK" ]; then
    local crictl; crictl=$(command -v crictl || echo "$(go env GOPATH)/bin/crictl")
    if [ -x "$crictl" ]; then
      "$crictl" --runtime-endpoint "unix://$SOCK" rmp -fa >/dev/null 2>&1 || true
    fi
    kill -TERM "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  # Shims of containers that were not removed are ours too: they name
  # our socket in their command line.
  for p in $(pgrep -f "containerd-shim-runc-v2 .*-address $SOCK" || true); do kill -KILL "$p" 2>/dev/null || true; done
  # Pods without a cgroup parent get /k8s.io/<id> cgroups; containerd
  # removes the containers' but leaves the k8s.io directories. Remove the
  # empty ones unless another containerd is running (it may use them).
  if ! pgrep -x containerd >/dev/null; then
    for d in /sys/fs/cgroup/*/k8s.io /sys/fs/cgroup/k8s.io; do
      if [ -d "$d" ]; then find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null || true; fi
    done
  fi
  { grep -o " $DIR/[^ ]*" /proc/self/mounts || true; } | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
  rm -rf "$DIR"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop [DIR]" >&2; exit 2 ;;
esac
