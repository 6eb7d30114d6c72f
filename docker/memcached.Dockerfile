# memcached from Debian's own package (1.6.18 in bookworm), for machines
# that reach Debian's archive but no image registry. Runs as Debian's
# memcache user; `docker run IMAGE memcached -m 64` works as with the
# official image, so `slabtap experiment --image` and MC_IMAGE take it:
#   docker build -f docker/memcached.Dockerfile --build-arg BASE=slabtap-base:bookworm \
#     -t slabtap-memcached:1.6.18 docker
# (docs/docker-tested.md: making slabtap-base:bookworm with debootstrap)
ARG BASE=debian:bookworm-slim
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends memcached \
 && rm -rf /var/lib/apt/lists/*
USER memcache
EXPOSE 11211
CMD ["memcached"]
