# Prometheus from Debian's package, for docker/compose.fleet.yml on
# machines that reach Debian's archive but no image registry (PROM_IMAGE).
# Its entrypoint is the server, as the official prom/prometheus image's.
#   docker build -f docker/prometheus.Dockerfile --build-arg BASE=slabtap-base:bookworm \
#     -t slabtap-prometheus:2.42 docker
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends prometheus \
 && rm -rf /var/lib/apt/lists/* \
 && install -d -o prometheus -g prometheus /prometheus
USER prometheus
WORKDIR /prometheus
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
