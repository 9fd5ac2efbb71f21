#!/usr/bin/env bash
# Makes sure a rootful Podman serves the Docker Engine API on $UNMASK_PODMAN_SOCKET (default
# /run/unmask-podman.sock) and that the test base image exists. Idempotent; used by `make test`
# before the `containers` tests.
#
# 1. apt-get install podman runc debootstrap when absent.
# 2. /etc/containers/containers.conf with runc + cgroupfs (crun fails on this VM's hybrid cgroups)
#    and ulimits this VM can grant (it cannot raise hard limits above these).
# 3. `podman system service --time=0 unix://SOCKET` in the background when the socket does not
#    answer.
# 4. The base image $UNMASK_TEST_BASE_IMAGE (default localhost/unmask-test-base:bookworm):
#    debootstrap --variant=minbase bookworm with python3 + python3-numpy, `podman import`ed once
#    (about 35 s and 120 MB) and reused by every test image afterwards. It needs the Debian mirror
#    once; nothing else is downloaded.
set -euo pipefail

SOCKET="${UNMASK_PODMAN_SOCKET:-/run/unmask-podman.sock}"
BASE_IMAGE="${UNMASK_TEST_BASE_IMAGE:-localhost/unmask-test-base:bookworm}"
MIRROR="${UNMASK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
CONF=/etc/containers/containers.conf
MARKER="# written by unmask scripts/ensure_podman.sh"

if [ "$(id -u)" != 0 ]; then
  echo "ensure_podman.sh: needs root (rootful Podman with runc)" >&2
  exit 1
fi

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# An existing containers.conf that is not ours is kept: the operator configured Podman.
if [ ! -f "$CONF" ] || grep -qF "$MARKER" "$CONF"; then
  mkdir -p /etc/containers
  cat >"$CONF.part" <<EOF
$MARKER
[containers]
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
  mv "$CONF.part" "$CONF"
fi

socket_up() {
  curl -sf --max-time 3 --unix-socket "$SOCKET" http://d/_ping >/dev/null 2>&1
}

if ! socket_up; then
  rm -f "$SOCKET"
  # Started from its own folder: conmon writes an `oom` marker into the service's working
  # directory when a container is OOM-killed (the sandbox tests do that on purpose), which
  # would otherwise litter the checkout.
  mkdir -p /var/lib/unmask-podman
  (cd /var/lib/unmask-podman && nohup podman system service --time=0 "unix://$SOCKET" \
    >/var/log/unmask-podman.log 2>&1 &)
  for _ in $(seq 1 50); do socket_up && break; sleep 0.2; done
  socket_up || { echo "podman system service does not answer on $SOCKET" >&2; exit 1; }
fi

if ! podman image exists "$BASE_IMAGE"; then
  root="$(mktemp -d /var/tmp/unmask-rootfs.XXXXXX)"
  trap 'rm -rf "$root"' EXIT
  debootstrap --variant=minbase --include=python3,python3-numpy bookworm "$root" "$MIRROR" \
    >/var/log/unmask-debootstrap.log 2>&1 \
    || { echo "debootstrap failed, see /var/log/unmask-debootstrap.log" >&2; exit 1; }
  # Package caches and docs are not needed at run time; they only make the image bigger.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc "$root"/usr/share/man "$root"/usr/share/locale
  tar -C "$root" -c . | podman import -q --change 'CMD ["/usr/bin/python3"]' - "$BASE_IMAGE" >/dev/null
  rm -rf "$root"
  trap - EXIT
fi
echo "Podman answers on unix://$SOCKET; base image $BASE_IMAGE is present."
