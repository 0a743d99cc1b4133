"""The sidecar image and the deployment examples, validated statically (no container
engine here): the Dockerfile's shape and the files it copies; the compose file's wiring;
`promtool check config` on every Prometheus config; `amtool check-config` on the
Alertmanager config; the Kubernetes manifests; every healthd config through
`healthd check-config`."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from monitoring_helpers import ALERTS, DEPLOY, ROOT, healthd_env, tool

DOCKERFILE = ROOT / "Dockerfile"
COMPOSE = DEPLOY / "compose"
K8S = DEPLOY / "kubernetes" / "healthd-sidecar.yaml"
SCALE = DEPLOY / "scale"


def instructions(path=DOCKERFILE) -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", path.read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), rest.strip()))
    return out


def test_dockerfile_is_multi_stage_slim_non_root_with_healthcheck_port_and_volumes():
    ins = instructions()
    froms = [rest for word, rest in ins if word == "FROM"]
    assert len(froms) >= 2 and any(" AS " in f.upper() for f in froms)
    args = dict(rest.split("=", 1) for word, rest in ins if word == "ARG" and "=" in rest)
    base = args["PYTHON_IMAGE"]
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", base), base
    assert all(f.startswith("${PYTHON_IMAGE}") for f in froms)
    assert any(word == "COPY" and rest.startswith("--from=build") for word, rest in ins)
    users = [rest for word, rest in ins if word == "USER"]
    # numeric, or Kubernetes' runAsNonRoot cannot verify it and refuses to start the pod
    assert users and re.fullmatch(r"[1-9]\d*:[1-9]\d*", users[-1]), users
    health = [rest for word, rest in ins if word == "HEALTHCHECK"]
    # the healthcheck reads the daemon's own configuration for the port (tests/daemon)
    assert len(health) == 1 and health[0].endswith('CMD ["healthd", "healthcheck"]')
    assert "HEALTHD_EXTRAS" in {rest.split("=")[0] for word, rest in ins if word == "ARG"}
    exposed = [rest for word, rest in ins if word == "EXPOSE"]
    assert exposed == ["9479"]
    volumes = " ".join(rest for word, rest in ins if word == "VOLUME")
    assert "/etc/healthd" in volumes and "/var/lib/healthd" in volumes
    env = " ".join(rest for word, rest in ins if word == "ENV")
    assert "HEALTHD_" not in env  # nothing overrides a mounted configuration file
    # the defaults live in the image's configuration file, which names what the image holds
    (cmd,) = [json.loads(rest) for word, rest in ins if word == "CMD"]
    assert cmd[:2] == ["run", "--config"]
    share = str(Path(cmd[2]).parent) + "/"
    copied = [rest.split() for word, rest in ins if word == "COPY" and rest.endswith(share)]
    assert copied and "deploy/docker/healthd.toml" in copied[0]
    from healthd.settings import load_settings

    settings = load_settings(str(ROOT / "deploy" / "docker" / "healthd.toml"), deep=False)
    assert settings.state_path == "/var/lib/healthd/state.sqlite"
    assert (settings.server.host, settings.server.port) == ("0.0.0.0", 9479)
    assert settings.logging.format == "json"
    example = settings.sources["example"].options["path"]
    assert Path(example).parent == Path(cmd[2]).parent
    assert "healthd/data/example_timeline.jsonl" in copied[0]
    entry = [rest for word, rest in ins if word == "ENTRYPOINT"]
    assert entry == ['["healthd"]']


def _build_context() -> set[str]:
    """The files `docker build .` sends, by the .dockerignore rules as Docker applies them
    (exceptions with `!`, the last matching line wins)."""
    from docker.utils.build import exclude_paths

    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    return set(exclude_paths(str(ROOT), patterns))


def test_everything_the_dockerfile_copies_is_in_the_build_context():
    context = _build_context()
    copied = 0
    for word, rest in instructions():
        if word != "COPY" or rest.startswith("--from"):
            continue
        *sources, _dest = shlex.split(rest)
        for source in sources:
            source = source.rstrip("/")
            assert (ROOT / source).exists(), source
            assert source in context, f"{source} is excluded by .dockerignore"
            if (ROOT / source).is_dir():
                assert any(p.startswith(source + "/") for p in context), source
            copied += 1
    assert copied >= 5
    # the wheel build needs the readme pyproject names; nothing big or private goes along
    assert "README.md" in (ROOT / "pyproject.toml").read_text()
    assert not any(p.startswith((".git/", ".venv/", ".cache/", "tests/")) for p in context)


def test_the_image_environment_is_a_valid_healthd_configuration(tmp_path):
    env = {
        **healthd_env(),
        "HEALTHD_STATE_PATH": str(tmp_path / "state.sqlite"),
        "HEALTHD_SERVER__HOST": "0.0.0.0",
        "HEALTHD_SERVER__PORT": "9479",
        "HEALTHD_LOGGING__FORMAT": "json",
    }
    proc = subprocess.run(
        [sys.executable, "-m", "healthd", "check-config"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr


def test_compose_wires_healthd_prometheus_alertmanager_and_grafana():
    compose = yaml.safe_load((COMPOSE / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"healthd", "prometheus", "alertmanager", "grafana"}
    assert (COMPOSE / services["healthd"]["build"]["context"] / "Dockerfile").is_file()
    for name, service in services.items():
        for volume in service.get("volumes", []):
            host = volume.split(":")[0]
            if host.startswith("."):
                assert (COMPOSE / host).exists(), f"{name}: {host}"
    assert services["grafana"]["image"].startswith("grafana/grafana:11.")
    assert "../../alerts:/etc/prometheus/rules:ro" in services["prometheus"]["volumes"]
    prom = yaml.safe_load((COMPOSE / "prometheus.yml").read_text())
    assert prom["rule_files"] == ["rules/*.rules.yml"]
    assert prom["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == [
        "alertmanager:9093"
    ]
    jobs = {j["job_name"]: j for j in prom["scrape_configs"]}
    thresholds = yaml.safe_load((ALERTS / "thresholds.yml").read_text())
    assert jobs[thresholds["job"]]["static_configs"][0]["targets"] == ["healthd:9479"]


def _promtool_check_config(config, tmp_path):
    """Check a Prometheus config laid out as in its container: rules/ holds alerts/.
    Debian's Prometheus is built without Kubernetes service discovery, so a
    kubernetes_sd_configs block is swapped for an empty static_configs one when the
    binary does not know it."""
    work = tmp_path / config.stem
    work.mkdir()
    (work / "rules").symlink_to(ALERTS)
    doc = yaml.safe_load(config.read_text())
    target = work / config.name
    target.write_text(yaml.safe_dump(doc))
    proc = subprocess.run(
        ["promtool", "check", "config", str(target)], capture_output=True, text=True
    )
    if proc.returncode and "kubernetes_sd_configs not found" in proc.stdout + proc.stderr:
        for job in doc["scrape_configs"]:
            if job.pop("kubernetes_sd_configs", None) is not None:
                job["static_configs"] = [{"targets": ["127.0.0.1:9479"]}]
        target.write_text(yaml.safe_dump(doc))
        proc = subprocess.run(
            ["promtool", "check", "config", str(target)], capture_output=True, text=True
        )
    return proc


@pytest.mark.skipif(tool("promtool") is None, reason="promtool not installed")
@pytest.mark.parametrize(
    "config",
    [
        COMPOSE / "prometheus.yml",
        SCALE / "prometheus-cluster.yml",
        SCALE / "prometheus-federation.yml",
    ],
    ids=lambda p: p.parent.name + "/" + p.name,
)
def test_promtool_check_config(config, tmp_path):
    proc = _promtool_check_config(config, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if yaml.safe_load(config.read_text()).get("rule_files"):
        assert "SUCCESS: 2 rule files found" in proc.stdout


@pytest.mark.skipif(
    tool("amtool") is None, reason="amtool not installed (Debian package prometheus-alertmanager)"
)
def test_amtool_check_config():
    proc = subprocess.run(
        ["amtool", "check-config", str(COMPOSE / "alertmanager.yml")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout


def test_alertmanager_routes_every_severity_the_rules_use():
    am = yaml.safe_load((COMPOSE / "alertmanager.yml").read_text())
    routed = {m for r in am["route"]["routes"] for m in r["matchers"]}
    assert 'severity="critical"' in routed  # pages; warnings go to the default receiver
    assert am["route"]["receiver"] in {r["name"] for r in am["receivers"]}


def _check_config(path, tmp_path):
    return subprocess.run(
        [sys.executable, "-m", "healthd", "check-config", "--config", str(path)],
        env=healthd_env(),
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )


def test_compose_healthd_config_is_valid(tmp_path):
    proc = _check_config(COMPOSE / "healthd.toml", tmp_path)
    assert proc.returncode == 0, proc.stderr


def _k8s_docs(path):
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _without_http_targets(text: str) -> tuple[str, list[dict]]:
    """The config without its `http` targets, and those targets. The `http` memory adapter
    is built and validated separately (issue of its own); everything else in the example
    goes through `healthd check-config` as is."""
    sections = re.split(r"(?m)^(?=\[)", text)
    kept, http = [], []
    for section in sections:
        if (
            section.startswith("[targets.")
            and tomllib.loads(section.split("\n", 1)[1]).get("kind") == "http"
        ):
            http.append(tomllib.loads(section.split("\n", 1)[1]))
        else:
            kept.append(section)
    return "".join(kept), http


def _check_example_config(text: str, tmp_path, name: str = "healthd.toml") -> list[dict]:
    rest, http = _without_http_targets(text)
    for target in http:  # the documented contract of an http target
        assert target["shadow"] is True and target["base_url"] and target["namespace"]
    config = tmp_path / name
    config.write_text(rest)
    proc = _check_config(config, tmp_path)
    assert proc.returncode == 0, proc.stderr
    return http


def test_kubernetes_sidecar_example(tmp_path):
    docs = {d["kind"]: d for d in _k8s_docs(K8S)}
    assert {"ConfigMap", "Deployment", "Service", "PodMonitor"} <= set(docs)
    pod = docs["Deployment"]["spec"]["template"]
    notes = pod["metadata"]["annotations"]
    assert notes["prometheus.io/scrape"] == "true"
    assert notes["prometheus.io/path"] == "/metrics"
    containers = {c["name"]: c for c in pod["spec"]["containers"]}
    assert set(containers) == {"memory-service", "healthd"}  # the sidecar pattern
    healthd = containers["healthd"]
    ports = {p["name"]: p["containerPort"] for p in healthd["ports"]}
    assert str(ports["metrics"]) == notes["prometheus.io/port"]
    assert healthd["livenessProbe"]["httpGet"]["path"] == "/healthz"
    # a long first replay must never take the memory service out of its Service
    assert "readinessProbe" not in healthd
    assert healthd["startupProbe"]["httpGet"]["path"] == "/healthz"
    assert healthd["securityContext"]["runAsNonRoot"] is True
    mounts = {m["mountPath"] for m in healthd["volumeMounts"]}
    assert {"/etc/healthd", "/var/lib/healthd"} <= mounts
    # the ConfigMap's healthd.toml is a valid configuration
    (http,) = _check_example_config(docs["ConfigMap"]["data"]["healthd.toml"], tmp_path)
    assert http["base_url"] == "http://127.0.0.1:8080"  # the memory service in the same pod
    assert http["token_env"] in {e["name"] for e in healthd["env"]}
    # the naive baseline fails on purpose: it has no place next to a real memory service
    assert 'kind = "naive"' not in docs["ConfigMap"]["data"]["healthd.toml"]


def test_sharded_fleet_example(tmp_path):
    docs = {d["kind"]: d for d in _k8s_docs(SCALE / "healthd-shards.yaml")}
    shards = docs["ConfigMap"]["data"]
    assert docs["StatefulSet"]["spec"]["replicas"] == len(shards)
    targets = []
    for name, text in shards.items():
        _check_example_config(text, tmp_path, name)
        targets += re.findall(r"^\[targets\.([\w-]+)\]", text, re.M)
    assert len(targets) == len(set(targets)), "each target on exactly one replica"


def test_otel_collector_receives_what_healthd_sends():
    collector = yaml.safe_load((SCALE / "otel-collector.yaml").read_text())
    traces = collector["service"]["pipelines"]["traces"]
    assert "otlp" in traces["receivers"] and traces["exporters"]
    http = collector["receivers"]["otlp"]["protocols"]["http"]["endpoint"]
    port = http.rsplit(":", 1)[1]
    for path in (K8S, SCALE / "healthd-shards.yaml"):
        for endpoint in re.findall(r'otlp_endpoint = "([^"]+)"', path.read_text()):
            assert endpoint.endswith(":" + port), endpoint
