# docker/postgres.Dockerfile's entrypoint: on the first start, a cluster
# whose superuser is $POSTGRES_USER (password from $POSTGRES_PASSWORD_FILE,
# scram-sha-256 over TCP, trust on the local socket only) and a database
# $POSTGRES_DB; then the server, on every address of the container. The
# first start's own server listens on a socket in /tmp only, so pg_isready
# (the fleet's healthcheck) says ready only once the real one runs.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  "$bin/initdb" -D "$PGDATA" -U "$POSTGRES_USER" --pwfile="$POSTGRES_PASSWORD_FILE" \
    --auth-local=trust --auth-host=scram-sha-256
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  "$bin/pg_ctl" -D "$PGDATA" -o "-c listen_addresses='' -c unix_socket_directories=/tmp" -w start
  psql -v ON_ERROR_STOP=1 -h /tmp -U "$POSTGRES_USER" -d postgres \
    -c "CREATE DATABASE \"$POSTGRES_DB\" OWNER \"$POSTGRES_USER\""
  "$bin/pg_ctl" -D "$PGDATA" -m fast -w stop
fi
exec "$bin/postgres" -D "$PGDATA" -c listen_addresses='*'
