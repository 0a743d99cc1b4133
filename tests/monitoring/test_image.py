"""The sidecar image, built from the Dockerfile by a real OCI builder (podman, runc) and run
as the sidecar: the container starts as its numeric user on a read-only root, /healthz,
/readyz and /metrics answer, a mounted configuration (another port, another target) is
honoured, and the image's HEALTHCHECK passes at that port.

No image registry is reachable here: the base is built from Debian packages by
scripts/local_base_image.sh (cached in .cache/base-image/, about 2 min the first time) and
passed as PYTHON_IMAGE. The build reaches PyPI through the host network, with the host's CA
bundle. Skipped, with the reason, where podman, runc or debootstrap are missing (scripts/test.sh
installs them) or where the suite does not run as root (debootstrap needs it)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from monitoring_helpers import ROOT, free_port, wait_for

pytestmark = pytest.mark.slow

BASE_IMAGE = "localhost/healthd-base:bookworm"
IMAGE = "localhost/healthd:test"
EXTRAS = "agentcore"  # one extra, to prove HEALTHD_EXTRAS reaches the image
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")


def _missing() -> str | None:
    tools = [t for t in ("podman", "runc", "debootstrap") if shutil.which(t) is None]
    if tools:
        return f"{', '.join(tools)} not installed (scripts/test.sh installs them as root)"
    if os.geteuid() != 0:
        return "building the base image with debootstrap needs root"
    return None


@pytest.fixture(scope="module")
def podman(tmp_path_factory) -> Iterator[list[str]]:
    """The podman command line, with what these machines need: runc (crun refuses hybrid
    cgroups) and no default ulimits (runc cannot set them in an unprivileged sandbox)."""
    reason = _missing()
    if reason:
        pytest.skip(reason)
    conf = tmp_path_factory.mktemp("podman") / "containers.conf"
    conf.write_text("[containers]\ndefault_ulimits = []\n")
    os.environ["CONTAINERS_CONF"] = str(conf)
    try:
        yield ["podman", "--runtime", "runc"]
    finally:
        os.environ.pop("CONTAINERS_CONF", None)


def _run(args: list[str], timeout: float, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)


@pytest.fixture(scope="module")
def image(podman, tmp_path_factory) -> str:
    base = _run([str(ROOT / "scripts" / "local_base_image.sh"), BASE_IMAGE], timeout=900)
    assert base.returncode == 0, base.stderr[-3000:]
    mounts = []
    if HOST_CA.is_file():  # a host behind a TLS-inspecting proxy: pip trusts what it trusts
        pip_conf = tmp_path_factory.mktemp("pip") / "pip.conf"
        pip_conf.write_text(f"[global]\ncert = {HOST_CA}\n")
        mounts = ["-v", f"{HOST_CA}:{HOST_CA}:ro", "-v", f"{pip_conf}:/etc/pip.conf:ro"]
    previous = _run([*podman, "image", "inspect", "--format", "{{.Id}}", IMAGE], timeout=60)
    build = _run(
        [
            *podman,
            "build",
            "--format",
            "docker",  # keeps HEALTHCHECK (the OCI format has no field for it)
            "--network",
            "host",
            *mounts,
            "--build-arg",
            f"PYTHON_IMAGE={BASE_IMAGE}",
            "--build-arg",
            f"HEALTHD_EXTRAS={EXTRAS}",
            "-t",
            IMAGE,
            str(ROOT),
        ],
        timeout=900,
    )
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    # the image this build replaced (its cached layers stay for the next build)
    old = previous.stdout.strip()
    if previous.returncode == 0 and old and not build.stdout.strip().endswith(old):
        _run([*podman, "rmi", old], timeout=120)
    return IMAGE


def test_image_runs_as_a_numeric_user_with_a_healthcheck_and_the_extras(podman, image):
    (inspect,) = json.loads(_run([*podman, "image", "inspect", image], timeout=60).stdout)
    assert inspect["Config"]["User"] == "10001:10001"
    assert inspect["Healthcheck"]["Test"] == ["CMD", "healthd", "healthcheck"]
    probe = _run(
        [
            *podman,
            "run",
            "--rm",
            "--network",
            "none",
            "--entrypoint",
            "python3",
            image,
            "-c",
            "import boto3, os, healthd; print(os.getuid(), os.getgid(), healthd.__version__)",
        ],
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-2000:]
    assert probe.stdout.split()[:2] == ["10001", "10001"]


MOUNTED_CONFIG = """\
state_path = "/var/lib/healthd/state.sqlite"

[schedule]
cron = "* * * * *"
run_on_start = true

[server]
host = "0.0.0.0"
port = {port}

[logging]
format = "json"

[sources.example]
kind = "file"
path = "/usr/local/share/healthd/example_timeline.jsonl"

[targets.mounted]
kind = "reference"
shadow = true
"""


@pytest.fixture
def sidecar(podman, image, tmp_path) -> Iterator[tuple[str, str]]:
    """The image run as the Kubernetes example runs it (read-only root, its own user, the
    configuration mounted read-only and named by `run --config`), on a port that only the
    mounted configuration names. Yields (container name, base URL); removed at the end."""
    port = free_port()
    config = tmp_path / "healthd.toml"
    config.write_text(MOUNTED_CONFIG.format(port=port))
    config.chmod(0o644)
    name = f"healthd-test-{uuid.uuid4().hex[:8]}"
    started = _run(
        [
            *podman,
            "run",
            "--detach",
            "--name",
            name,
            "--network",
            "host",
            "--read-only",
            "--health-interval",
            "disable",  # checked below with `podman healthcheck run`, not by a timer
            "-v",
            f"{config}:/etc/healthd/healthd.toml:ro",
            image,
            "run",
            "--config",
            "/etc/healthd/healthd.toml",
        ],
        timeout=120,
    )
    assert started.returncode == 0, started.stderr[-2000:]
    try:
        yield name, f"http://127.0.0.1:{port}"
    finally:
        _run([*podman, "rm", "--force", "--time", "5", name], timeout=60)


def _metrics_after_a_run(url: str, target: str) -> str | None:
    text = requests.get(url + "/metrics", timeout=5).text
    ran = f'healthd_last_success_timestamp_seconds{{role="subject",target="{target}"}}' in text
    return text if ran else None


def _logs(podman: list[str], name: str) -> str:
    out = _run([*podman, "logs", name], timeout=60)
    return (out.stdout + out.stderr)[-4000:]


def test_the_image_runs_as_the_sidecar_with_a_mounted_config(podman, sidecar):
    name, url = sidecar
    try:
        wait_for(
            lambda: requests.get(url + "/healthz", timeout=2).status_code == 200,
            timeout=60,
            what="/healthz",
        )
        wait_for(
            lambda: requests.get(url + "/readyz", timeout=2).status_code == 200,
            timeout=60,
            what="/readyz",
        )
        metrics = wait_for(
            lambda: _metrics_after_a_run(url, "mounted"),
            timeout=60,
            what="a successful run of the mounted config's target",
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_logs(podman, name)}") from None
    assert 'healthd_freshness_ratio{domain="all",role="subject",target="mounted"}' in metrics
    assert 'target="naive"' not in metrics and 'target="reference"' not in metrics
    # the image's HEALTHCHECK asks the port of the configuration the daemon runs with
    health = _run([*podman, "healthcheck", "run", name], timeout=60)
    assert health.returncode == 0, health.stdout + health.stderr + _logs(podman, name)
    # and it fails when the daemon stops answering (stopped from the host: a container's
    # pid 1 ignores signals sent from inside)
    _run([*podman, "kill", "--signal", "STOP", name], timeout=30)
    down = _run([*podman, "exec", name, "healthd", "healthcheck", "--timeout", "1"], timeout=30)
    _run([*podman, "kill", "--signal", "CONT", name], timeout=30)
    assert down.returncode == 1
    assert f"{url.rsplit(':', 1)[1]}/healthz" in down.stderr
