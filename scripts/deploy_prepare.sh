#!/usr/bin/env bash
# What the deployment check needs on this machine, installed when absent (idempotent):
# rootful Podman with runc and debootstrap (scripts/ensure_podman.sh), podman-compose (Debian's),
# the local base images from Debian's packages and the wheelhouse the images install from.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
  echo "deploy-check: needs root (rootful Podman)" >&2
  exit 1
fi
bash scripts/ensure_podman.sh
if ! command -v podman-compose >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman-compose >/dev/null
fi
bash scripts/deploy_base_images.sh
bash scripts/deploy_wheelhouse.sh
