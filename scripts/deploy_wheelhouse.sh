#!/usr/bin/env bash
# The deployment check's wheelhouse: every wheel the images install (constraints.txt pins the
# versions), downloaded once per machine with the host's pip and mounted into `podman build`, so
# images build without a network inside the build and a rebuild downloads nothing. Idempotent
# (pip skips wheels already there).
set -euo pipefail
cd "$(dirname "$0")/.."
WHEELHOUSE="${UNMASK_WHEELHOUSE:-/var/cache/unmask-deploy/wheelhouse}"
PIP="${PIP:-.venv/bin/pip}"
mkdir -p "$WHEELHOUSE"
# A stamp per dependency set: resolving again takes a minute even when nothing is missing.
STAMP="$WHEELHOUSE/.complete-$(cat pyproject.toml constraints.txt "$0" | sha256sum | cut -c1-16)"
if [ -f "$STAMP" ]; then
  touch "$STAMP"
echo "wheelhouse $WHEELHOUSE is complete for these constraints"
  exit 0
fi
# async-timeout: redis needs it on Python < 3.11.3, which Debian bookworm's 3.11.2 is (the host's
# newer Python would not download it). setuptools and wheel build the project itself.
"$PIP" download -q -c constraints.txt -d "$WHEELHOUSE" . "moto[server]" \
  "async-timeout>=4.0.3" "setuptools>=77" wheel 2> >(grep -v "is ignored: it is neither" >&2)
# Source-only packages (webrtcvad, a dependency of resemblyzer) are built into wheels here, with
# this host's compiler, so the image installs them without one.
for sdist in "$WHEELHOUSE"/webrtcvad-*.tar.gz; do
  [ -e "$sdist" ] && "$PIP" wheel -q --no-deps -w "$WHEELHOUSE" "$sdist"
done
touch "$STAMP"
echo "wheelhouse $WHEELHOUSE: $(ls "$WHEELHOUSE" | wc -l) wheels, $(du -sh "$WHEELHOUSE" | cut -f1)"
