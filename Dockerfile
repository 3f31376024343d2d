# vgpu-webhook container image.
#
#   docker build -t REGISTRY/vgpu-webhook:0.1.0 .
#
# The build stage compiles with the Makefile's own flags (make build); the
# run stage holds the binary and the shared libraries it links, and runs as
# the unprivileged user 65532, as the Helm chart expects.  The run stage
# names exactly the packages of the libraries in the binary's DT_NEEDED
# entries (tests/chart/test_chart.py checks it); libcurl3-gnutls is for
# `vgpu-webhook check`, which the chart's `helm test` pod runs.
# libmicrohttpd is linked statically: make build builds Debian 12's 0.9.75
# with patches/libmicrohttpd/ applied (scripts/build-mhd.sh fetches its
# source from the Debian archive that the image's apt uses).

FROM debian:12 AS build
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		build-essential pkg-config libgnutls28-dev \
		libjansson-dev libcurl4-gnutls-dev libyaml-dev \
		curl ca-certificates xz-utils \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY scripts/build-mhd.sh scripts/apt-mirror.sh scripts/
COPY patches/ patches/
COPY lib/ lib/
COPY webhook/ webhook/
RUN make build \
	&& strip --strip-unneeded build/vgpu-webhook \
	&& build/vgpu-webhook version

FROM debian:12-slim
RUN apt-get update \
	&& DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
		libjansson4 libgnutls30 libcurl3-gnutls libyaml-0-2 \
	&& rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/vgpu-webhook /usr/local/bin/vgpu-webhook
USER 65532:65532
# 9443: HTTPS admission reviews; 9090: /metrics, /healthz, /readyz.
EXPOSE 9443 9090
# The default command serves the built-in policy with a certificate mounted
# at /certs; add --config FILE for another policy (the Helm chart does).
ENTRYPOINT ["/usr/local/bin/vgpu-webhook"]
CMD ["serve", "--listen", "0.0.0.0:9443", "--tls-cert-file", "/certs/tls.crt", "--tls-private-key-file", "/certs/tls.key", "--metrics-listen", "0.0.0.0:9090", "--log-format", "json"]
