# PostgreSQL 15 from Debian's package, for docker/compose.fleet.yml on
# machines that reach Debian's archive but no image registry (PG_IMAGE).
# It reads what the fleet gives the official postgres image:
# POSTGRES_USER, POSTGRES_DB and POSTGRES_PASSWORD_FILE (first start only).
#   docker build -f docker/postgres.Dockerfile --build-arg BASE=slabtap-base:bookworm \
#     -t slabtap-postgres:15 docker
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
USER postgres
ENV PGDATA=/var/lib/postgresql/data
EXPOSE 5432
ENTRYPOINT ["bash", "/usr/local/bin/postgres-entrypoint.sh"]
