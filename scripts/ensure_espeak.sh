#!/usr/bin/env bash
# Makes sure Debian's espeak-ng is installed (the eSpeak NG corpus builder,
# scripts/build_espeak_corpus.py, and its test render speech with it). Idempotent: does nothing
# when the program is there. Needs root (apt-get) the first time.
set -euo pipefail

if command -v espeak-ng >/dev/null 2>&1; then
  echo "espeak-ng present: $(espeak-ng --version | head -1)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "need root to apt-get install espeak-ng (or install Debian's espeak-ng package)" >&2
  exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends espeak-ng >/dev/null
command -v espeak-ng >/dev/null || { echo "espeak-ng did not install" >&2; exit 1; }
echo "espeak-ng installed: $(espeak-ng --version | head -1)"
