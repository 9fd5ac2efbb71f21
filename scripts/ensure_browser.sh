#!/usr/bin/env bash
# Makes sure headless Chromium from Debian's packages is at /usr/bin/chromium (the browser tests,
# tests/browser/, drive it with Playwright; no browser is downloaded by Playwright itself).
# Idempotent: does nothing when the binary is there. Needs root (apt-get) the first time.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "Chromium present: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "need root to apt-get install chromium (or install Debian's chromium package)" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  chromium fonts-dejavu-core >/dev/null
[ -x /usr/bin/chromium ] || { echo "chromium did not install to /usr/bin/chromium" >&2; exit 1; }
echo "Chromium installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
