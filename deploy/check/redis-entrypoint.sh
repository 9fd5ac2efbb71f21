#!/bin/sh
# The deployment check's Redis (Debian's redis-server): like the official image, `redis-server`
# runs as user redis in /data and listens on the container network without protected mode.
set -eu
if [ "${1:-}" = redis-server ]; then
  chown -R redis:redis /data
  exec setpriv --reuid=redis --regid=redis --init-groups "$@" --protected-mode no
fi
exec "$@"
