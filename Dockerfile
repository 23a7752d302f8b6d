# syntax=docker/dockerfile:1
# gpu-admission container image: built on Debian 12 (bookworm), run on debian:12-slim with only
# the shared libraries the binary links against, as a non-root user.
#
#   docker build -t gpu-admission:0.1.0 --build-arg GPU_ADMISSION_COMMIT=$(git rev-parse --short=12 HEAD) .
#   docker run --rm gpu-admission:0.1.0 version
#
# The chart (charts/gpu-admission) runs it with a read-only root filesystem as UID/GID 65532.

ARG DEBIAN_IMAGE=debian:12
ARG RUNTIME_IMAGE=debian:12-slim

FROM ${DEBIAN_IMAGE} AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      cmake make g++ pkg-config \
      libcpp-httplib-dev libssl-dev nlohmann-json3-dev libyaml-cpp-dev libyaml-dev libsimdjson-dev prometheus-cpp-dev \
      libbenchmark-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
# The git commit `version` and gpu_admission_build_info report (.git is not in the build context):
#   docker build --build-arg GPU_ADMISSION_COMMIT=$(git rev-parse --short=12 HEAD) .
ARG GPU_ADMISSION_COMMIT=unknown
# A profile-guided release build: instrumented, trained on the benchmark's reviews, built again
# (scripts/build-pgo.sh; about 10% more requests/s than a plain -O3 build, bench/README.md).
RUN scripts/build-pgo.sh /build -DGPU_ADMISSION_COMMIT="${GPU_ADMISSION_COMMIT}" \
 && strip --strip-unneeded /build/gpu-admission \
 && /build/gpu-admission version

FROM ${RUNTIME_IMAGE}
# Runtime libraries only (no compilers, no -dev packages). The one outbound connection the binary
# makes is `serve`'s to the Kubernetes API server (cluster state: namespaces, DRA claims, the pods a
# claim is allocated for; on by default in a pod, `--cluster off` turns it off). It verifies the
# API server with the service account's CA bundle (or the kubeconfig's certificate-authority), so
# there is no system CA certificate store: a kubeconfig that names no certificate authority fails
# verification in this image.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libcpp-httplib0.11 libssl3 libyaml-cpp0.7 libyaml-0-2 libsimdjson14 libprometheus-cpp-core1.0 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/* /var/log/apt /var/log/dpkg.log
COPY --from=build /build/gpu-admission /usr/local/bin/gpu-admission
# Fail the build if a shared library is missing from the runtime image.
RUN ! ldd /usr/local/bin/gpu-admission | grep -q 'not found' \
 && /usr/local/bin/gpu-admission version

LABEL org.opencontainers.image.title="gpu-admission" \
      org.opencontainers.image.description="Validating and mutating admission webhook for multi-tenant GPU clusters" \
      org.opencontainers.image.version="0.1.0"

# 65532 is the conventional "nonroot" UID/GID; no passwd entry is needed.
USER 65532:65532
# 8443: HTTPS (/validate, /mutate, /healthz, /readyz); 9090: HTTP /metrics.
EXPOSE 8443 9090
ENTRYPOINT ["gpu-admission"]
CMD ["serve"]
