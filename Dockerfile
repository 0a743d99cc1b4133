# syntax=docker/dockerfile:1
# healthd sidecar image.
#
#   docker build -t healthd .
#   docker build --build-arg HEALTHD_EXTRAS=agentcore,mem0 -t healthd .   # optional extras
#   docker run --rm -p 9479:9479 -v healthd-state:/var/lib/healthd healthd
#   docker run --rm -p 9479:9479 -v "$PWD/healthd.toml:/etc/healthd/healthd.toml:ro" \
#       -v healthd-state:/var/lib/healthd healthd run --config /etc/healthd/healthd.toml
#
# With no arguments it runs with the image's configuration, deploy/docker/healthd.toml (the
# bundled example against the reference and naive memories every minute, state in
# /var/lib/healthd, JSON logs). The image sets no HEALTHD_* variables: a configuration you
# mount is not overridden by anything but what you pass. /metrics, /healthz and /readyz on
# port 9479; the HEALTHCHECK (`healthd healthcheck`) asks /healthz at the port of the
# configuration the daemon was started with. The process runs as uid:gid 10001:10001.
#
# HEALTHD_EXTRAS: comma-separated extras installed with healthd (agentcore, mem0, graphiti).
# PYTHON_IMAGE: the base, any Debian-based image with python3 and its venv module (where no
# registry is reachable, scripts/local_base_image.sh builds one from Debian packages).

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: a virtualenv with healthd, its dependencies and the chosen extras ---------------
FROM ${PYTHON_IMAGE} AS build
ARG HEALTHD_EXTRAS=""
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# the dependencies first, from pyproject.toml alone, so that a code change reuses this layer
COPY pyproject.toml ./
RUN python3 -m venv /opt/healthd \
    && python3 -c 'import sys, tomllib; \
project = tomllib.load(open("pyproject.toml", "rb"))["project"]; \
extras = [e.strip() for e in sys.argv[1].split(",") if e.strip()]; \
unknown = sorted(set(extras) - set(project["optional-dependencies"])); \
unknown and sys.exit(f"HEALTHD_EXTRAS: unknown extra(s) {unknown}"); \
print("\n".join(project["dependencies"] \
    + [d for e in extras for d in project["optional-dependencies"][e]] \
    + ["setuptools>=69", "wheel"]))' "${HEALTHD_EXTRAS}" > /tmp/requirements.txt \
    && /opt/healthd/bin/pip install -r /tmp/requirements.txt
COPY README.md ./
COPY healthd ./healthd
RUN /opt/healthd/bin/pip install --no-deps --no-build-isolation . \
    && /opt/healthd/bin/pip check \
    && /opt/healthd/bin/healthd --version

# --- runtime ------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/healthd/bin:$PATH
# git: the git and adr sources read repository history with it (installed when the base
# lacks it).
RUN if ! command -v git >/dev/null; then \
        apt-get update \
        && apt-get install -y --no-install-recommends git ca-certificates \
        && rm -rf /var/lib/apt/lists/*; \
    fi \
    && groupadd --system --gid 10001 healthd \
    && useradd --system --uid 10001 --gid healthd --home-dir /var/lib/healthd \
         --shell /usr/sbin/nologin healthd \
    && mkdir -p /etc/healthd /var/lib/healthd \
    && chown healthd:healthd /var/lib/healthd
COPY --from=build /opt/healthd /opt/healthd
COPY deploy/docker/healthd.toml healthd/data/example_timeline.jsonl /usr/local/share/healthd/

# numeric, so that Kubernetes' runAsNonRoot can check it without a runAsUser
USER 10001:10001
WORKDIR /var/lib/healthd
# /etc/healthd: configuration (healthd.toml, probes, timelines), mounted read-only;
# /var/lib/healthd: state (source cursors, replayed events, persistent shadows).
VOLUME ["/etc/healthd", "/var/lib/healthd"]
EXPOSE 9479
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["healthd", "healthcheck"]
ENTRYPOINT ["healthd"]
CMD ["run", "--config", "/usr/local/share/healthd/healthd.toml"]
