#!/usr/bin/env bash
# Local base images for the deployment check, made from Debian's packages (no image registry):
#
#   localhost/unmask-deploy-python:bookworm    python3, venv, libsndfile: deploy/Dockerfile's base
#   localhost/unmask-deploy-postgres:bookworm  PostgreSQL 15 (rootfs; deploy/check adds the entrypoint)
#   localhost/unmask-deploy-redis:bookworm     Redis 7
#
# Each is `debootstrap --variant=minbase bookworm` with its packages, `podman import`ed once per
# machine (the three run in parallel, about a minute) and reused afterwards. Idempotent.
set -euo pipefail

MIRROR="${UNMASK_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
LOG_DIR="${UNMASK_DEPLOY_LOG_DIR:-/var/log/unmask-deploy}"
mkdir -p "$LOG_DIR"

declare -A PACKAGES=(
  [python]="python3,python3-venv,libsndfile1,ca-certificates"
  [postgres]="postgresql-15"
  [redis]="redis-server"
)

build_one() {
  local name="$1" image="localhost/unmask-deploy-$1:bookworm"
  podman image exists "$image" && return 0
  local root
  root="$(mktemp -d /var/tmp/unmask-deploy-rootfs.XXXXXX)"
  if ! debootstrap --variant=minbase --include="${PACKAGES[$name]}" bookworm "$root" "$MIRROR" \
    >"$LOG_DIR/debootstrap-$name.log" 2>&1; then
    echo "debootstrap of $name failed, see $LOG_DIR/debootstrap-$name.log" >&2
    rm -rf "$root"
    return 1
  fi
  # Package caches and docs are not needed at run time; they only make the image bigger.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* \
    "$root"/usr/share/doc "$root"/usr/share/man
  tar -C "$root" -c . | podman import -q - "$image" >/dev/null
  rm -rf "$root"
  echo "built $image"
}

pids=()
for name in python postgres redis; do
  build_one "$name" &
  pids+=("$!")
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit "$status"
