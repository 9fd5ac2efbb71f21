#!/bin/sh
# The deployment check's PostgreSQL (Debian's postgresql-15): the official image's contract,
# POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB and a cluster in PGDATA initialised on first start.
set -eu
PGDATA="${PGDATA:-/var/lib/postgresql/data}"
BIN=/usr/lib/postgresql/15/bin
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

mkdir -p "$PGDATA" /var/run/postgresql
chown -R postgres:postgres "$PGDATA" /var/run/postgresql
chmod 700 "$PGDATA"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres "$BIN/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$pwfile" \
    --encoding=UTF8 --locale=C.UTF-8 --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  as_postgres "$BIN/pg_ctl" -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
  if [ "$POSTGRES_DB" != postgres ]; then
    as_postgres psql -q -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\""
  fi
  as_postgres "$BIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null
  echo "initialised $PGDATA"
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups \
  "$BIN/postgres" -D "$PGDATA" -c listen_addresses='*'
