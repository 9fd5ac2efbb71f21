#!/usr/bin/env bash
# Makes sure PostgreSQL and Redis answer on loopback: start them if they don't, install them with
# apt-get when absent. Idempotent; used by `make test`.
set -euo pipefail

apt_install() {
  if [ "$(id -u)" != 0 ]; then echo "need root to apt-get install $*" >&2; exit 1; fi
  if [ -z "${_APT_UPDATED:-}" ]; then apt-get update -qq; _APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

pg_up() { pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; }
redis_up() { [ "$(redis-cli -h 127.0.0.1 -p 6379 ping 2>/dev/null)" = "PONG" ]; }

if ! pg_up; then
  if ! command -v pg_ctlcluster >/dev/null || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    apt_install postgresql
  fi
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start || true
  for _ in $(seq 1 30); do pg_up && break; sleep 1; done
  pg_up || { echo "PostgreSQL does not answer on 127.0.0.1:5432" >&2; exit 1; }
fi

if ! redis_up; then
  command -v redis-server >/dev/null || apt_install redis-server
  redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
  for _ in $(seq 1 30); do redis_up && break; sleep 0.5; done
  redis_up || { echo "Redis does not answer on 127.0.0.1:6379" >&2; exit 1; }
fi
echo "PostgreSQL and Redis answer on loopback."
