# syntax=docker/dockerfile:1
# healthd sidecar image.
#
#   docker build -t healthd .
#   docker run --rm -p 9479:9479 -v healthd-state:/var/lib/healthd healthd
#   docker run --rm -p 9479:9479 -v "$PWD/healthd.toml:/etc/healthd/healthd.toml:ro" \
#       -v healthd-state:/var/lib/healthd healthd run --config /etc/healthd/healthd.toml
#
# With no arguments it runs with the image's configuration, deploy/docker/healthd.toml (the
# bundled example against the reference and naive memories every minute, state in
# /var/lib/healthd, JSON logs). The image sets no HEALTHD_* variables: a configuration you
# mount is not overridden by anything but what you pass. /metrics, /healthz and /readyz on
# port 9479.

ARG PYTHON_IMAGE=python:3.11-slim-bookworm

# --- build: a wheel of healthd and wheels of its dependencies -------------------------------
FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY healthd ./healthd
RUN python -m pip wheel --wheel-dir /wheels .

# --- runtime ------------------------------------------------------------------------------
FROM ${PYTHON_IMAGE} AS runtime
ARG HEALTHD_UID=10001
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
# git: the git and adr sources read repository history with it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid "${HEALTHD_UID}" healthd \
    && useradd --system --uid "${HEALTHD_UID}" --gid healthd --home-dir /var/lib/healthd \
         --shell /usr/sbin/nologin healthd \
    && mkdir -p /etc/healthd /var/lib/healthd \
    && chown healthd:healthd /var/lib/healthd
COPY --from=build /wheels /tmp/wheels
RUN python -m pip install --no-index --find-links /tmp/wheels healthd \
    && rm -rf /tmp/wheels
COPY deploy/docker/healthd.toml healthd/data/example_timeline.jsonl /usr/local/share/healthd/

USER healthd:healthd
WORKDIR /var/lib/healthd
# /etc/healthd: configuration (healthd.toml, probes, timelines), mounted read-only;
# /var/lib/healthd: state (source cursors, replayed events, persistent shadows).
VOLUME ["/etc/healthd", "/var/lib/healthd"]
EXPOSE 9479
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('HEALTHD_SERVER__PORT', '9479'), timeout=4)"]
ENTRYPOINT ["healthd"]
CMD ["run", "--config", "/usr/local/share/healthd/healthd.toml"]
