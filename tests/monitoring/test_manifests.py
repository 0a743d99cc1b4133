"""Every Kubernetes manifest in deploy/ against the strict schema of its kind, offline:
built-in kinds with kubernetes-validate's bundled schemas, the Prometheus Operator's
PodMonitor/ServiceMonitor with the schemas in tests/schemas/. The compose file against the
compose specification (the copy check-jsonschema ships). Then what a schema cannot see and
the kubelet or Prometheus would: a runAsNonRoot container needs a numeric user, a
StatefulSet's serviceName must be a headless Service, and a PodMonitor/ServiceMonitor must
give its series the `job` the alerts select."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml
from monitoring_helpers import ALERTS, DEPLOY, ROOT

K8S_VERSION = "1.30.0"  # the oldest Kubernetes the examples promise (pod-index label: 1.28+)
SCHEMAS = ROOT / "tests" / "schemas"
WORKLOADS = {"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"}
COMPOSE = DEPLOY / "compose" / "compose.yaml"


def _documents() -> Iterator[tuple[Path, dict[str, Any]]]:
    for path in sorted(DEPLOY.rglob("*.y*ml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and "apiVersion" in doc and "kind" in doc:
                yield path, doc


MANIFESTS = list(_documents())


def _id(item: tuple[Path, dict[str, Any]]) -> str:
    path, doc = item
    return f"{path.relative_to(DEPLOY)}:{doc['kind']}/{doc['metadata']['name']}"


def schema_errors(doc: dict[str, Any]) -> list[str]:
    """Every way `doc` breaks the strict schema of its kind (unknown fields included)."""
    group = doc["apiVersion"].split("/")[0]
    if group == "monitoring.coreos.com":
        version = doc["apiVersion"].split("/")[1]
        path = SCHEMAS / group / f"{doc['kind'].lower()}_{version}.json"
        assert path.is_file(), f"no schema for {doc['apiVersion']} {doc['kind']} in {SCHEMAS}"
        schema = json.loads(path.read_text())
        validator = jsonschema.validators.validator_for(schema)(schema)
        return [
            f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in validator.iter_errors(doc)
        ]
    try:
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        return [str(exc).splitlines()[0]]
    return []


def test_deploy_holds_the_manifests_the_readme_names():
    kinds = {(p.name, d["kind"]) for p, d in MANIFESTS}
    assert {
        ("healthd-sidecar.yaml", "Deployment"),
        ("healthd-sidecar.yaml", "PodMonitor"),
        ("healthd-shards.yaml", "StatefulSet"),
        ("healthd-shards.yaml", "Service"),
    } <= kinds


@pytest.mark.parametrize("item", MANIFESTS, ids=_id)
def test_manifest_is_valid_against_the_strict_schema_of_its_kind(item):
    _path, doc = item
    assert schema_errors(doc) == []


def test_the_schemas_are_strict():
    """A misspelt field fails, in a built-in kind and in a Prometheus Operator kind."""
    (_, deployment) = next((p, d) for p, d in MANIFESTS if d["kind"] == "Deployment")
    (_, monitor) = next((p, d) for p, d in MANIFESTS if d["kind"] == "PodMonitor")
    typo = json.loads(json.dumps(deployment))
    typo["spec"]["template"]["spec"]["containers"][0]["securityContext"] = {"runAsNonroot": True}
    assert "'runAsNonroot' was unexpected" in " ".join(schema_errors(typo))
    typo = json.loads(json.dumps(monitor))
    typo["spec"]["podMetricEndpoints"] = typo["spec"].pop("podMetricsEndpoints")
    assert any("podMetricEndpoints" in e for e in schema_errors(typo))


# --- what the schemas cannot check -----------------------------------------------------------


def _dockerfile_user() -> str:
    users = re.findall(r"(?m)^USER\s+(\S+)", (ROOT / "Dockerfile").read_text())
    return users[-1]


def _from_this_repo(image: str) -> bool:
    repository = re.split(r"[:@]", image.rsplit("/", 1)[-1], maxsplit=1)[0]
    return repository == "healthd"


def _pod_templates() -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
    for path, doc in MANIFESTS:
        if doc["kind"] in WORKLOADS:
            yield path, doc, doc["spec"]["template"]
        elif doc["kind"] == "Pod":
            yield path, doc, doc


def non_root_problems(workload: dict[str, Any], pod: dict[str, Any]) -> list[str]:
    """The kubelet refuses a runAsNonRoot container whose user it cannot verify as non-zero:
    no runAsUser and an image whose USER is a name (or none), or runAsUser 0."""
    problems = []
    spec = pod["spec"]
    pod_context = spec.get("securityContext", {})
    for container in spec.get("initContainers", []) + spec["containers"]:
        context = container.get("securityContext", {})
        if not context.get("runAsNonRoot", pod_context.get("runAsNonRoot", False)):
            continue
        where = f"{workload['kind']}/{workload['metadata']['name']} container {container['name']}"
        uid = context.get("runAsUser", pod_context.get("runAsUser"))
        if uid is None:
            if not _from_this_repo(container["image"]):
                problems.append(f"{where}: runAsNonRoot with no runAsUser, image user unknown")
                continue
            user = _dockerfile_user().split(":")[0]
            if not user.isdigit():
                problems.append(f"{where}: runAsNonRoot and the image's USER {user!r} not numeric")
                continue
            uid = int(user)
        if uid == 0:
            problems.append(f"{where}: runAsNonRoot with runAsUser 0")
    return problems


def test_run_as_non_root_containers_have_a_numeric_non_zero_user():
    problems = [p for _, w, pod in _pod_templates() for p in non_root_problems(w, pod)]
    assert problems == []


def test_non_root_check_catches_what_the_kubelet_refuses():
    pod = {
        "spec": {
            "securityContext": {"runAsNonRoot": True},
            "containers": [
                {"name": "a", "image": "registry.example.com/acme/memory-service:1"},
                {"name": "b", "image": "healthd:1", "securityContext": {"runAsUser": 0}},
                {"name": "c", "image": "x", "securityContext": {"runAsUser": 7}},
            ],
        }
    }
    problems = non_root_problems({"kind": "Deployment", "metadata": {"name": "d"}}, pod)
    assert [p.split(":")[0] for p in problems] == [
        "Deployment/d container a",
        "Deployment/d container b",
    ]


def test_statefulset_service_name_is_a_headless_service_selecting_its_pods():
    for path, doc in MANIFESTS:
        if doc["kind"] != "StatefulSet":
            continue
        name = doc["spec"]["serviceName"]
        services = [
            d
            for p, d in MANIFESTS
            if p == path and d["kind"] == "Service" and d["metadata"]["name"] == name
        ]
        assert services, f"{path.name}: StatefulSet {doc['metadata']['name']}: no Service {name}"
        (service,) = services
        assert service["spec"].get("clusterIP") == "None", f"Service {name} is not headless"
        labels = doc["spec"]["template"]["metadata"]["labels"]
        assert service["spec"]["selector"].items() <= labels.items()


def _job_of(monitor: dict[str, Any], labels: dict[str, str]) -> str:
    """The `job` the Prometheus Operator gives a PodMonitor's (ServiceMonitor's) series:
    <namespace>/<name>, replaced by the value of the `jobLabel` label when the pod (service)
    has it, then by the endpoint's relabelings that target `job`."""
    namespace = monitor["metadata"].get("namespace", "default")
    job = f"{namespace}/{monitor['metadata']['name']}"
    if labels.get(monitor["spec"].get("jobLabel", "")):
        job = labels[monitor["spec"]["jobLabel"]]
    endpoints = monitor["spec"].get("podMetricsEndpoints") or monitor["spec"]["endpoints"]
    for endpoint in endpoints:
        for relabel in endpoint.get("relabelings", []):
            if relabel.get("targetLabel") != "job":
                continue
            action = relabel.get("action", "replace").lower()
            assert action == "replace" and not relabel.get("sourceLabels"), relabel
            job = relabel.get("replacement", "$1")
    return job


def _selected(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    return selector.get("matchLabels", {}).items() <= labels.items()


def test_pod_and_service_monitors_give_the_job_the_alerts_select():
    job = yaml.safe_load((ALERTS / "thresholds.yml").read_text())["job"]
    assert f'job="{job}"' in (ALERTS / "alerts.rules.yml").read_text()
    monitors = [(p, d) for p, d in MANIFESTS if d["kind"] in ("PodMonitor", "ServiceMonitor")]
    assert monitors
    for path, monitor in monitors:
        if monitor["kind"] == "PodMonitor":
            scraped = [
                (t["metadata"]["labels"], t["spec"]["containers"])
                for p, _, t in _pod_templates()
                if p == path and _selected(monitor["spec"]["selector"], t["metadata"]["labels"])
            ]
            ports = {
                port.get("name")
                for _, containers in scraped
                for c in containers
                for port in c.get("ports", [])
            }
            wanted = {e["port"] for e in monitor["spec"]["podMetricsEndpoints"]}
        else:
            services = [
                d
                for p, d in MANIFESTS
                if p == path
                and d["kind"] == "Service"
                and _selected(monitor["spec"]["selector"], d["metadata"].get("labels", {}))
            ]
            scraped = [(s["metadata"].get("labels", {}), []) for s in services]
            ports = {port.get("name") for s in services for port in s["spec"]["ports"]}
            wanted = {e["port"] for e in monitor["spec"]["endpoints"]}
        name = f"{path.name}: {monitor['kind']}/{monitor['metadata']['name']}"
        assert scraped, f"{name} selects nothing in its file"
        assert wanted <= ports, f"{name}: no port named {wanted - ports}"
        for labels, _ in scraped:
            assert _job_of(monitor, labels) == job, f"{name}: job is not {job!r}"


def test_job_label_naming_a_label_the_pod_lacks_gives_namespace_slash_name():
    monitor = {
        "metadata": {"name": "healthd", "namespace": "obs"},
        "spec": {"jobLabel": "app.kubernetes.io/component", "podMetricsEndpoints": [{}]},
    }
    assert _job_of(monitor, {"app.kubernetes.io/name": "memory-service"}) == "obs/healthd"
    assert _job_of(monitor, {"app.kubernetes.io/component": "healthd"}) == "healthd"


# --- compose -----------------------------------------------------------------------------------


def _check_compose(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_compose_file_is_valid_against_the_compose_specification(tmp_path):
    proc = _check_compose(COMPOSE)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # strict: a misspelt key fails
    doc = yaml.safe_load(COMPOSE.read_text())
    doc["services"]["healthd"]["restart_policy"] = doc["services"]["healthd"].pop("restart")
    typo = tmp_path / "compose.yaml"
    typo.write_text(yaml.safe_dump(doc))
    proc = _check_compose(typo)
    assert proc.returncode == 1 and "restart_policy" in proc.stdout, proc.stdout


def test_compose_publishes_and_scrapes_the_port_its_healthd_config_listens_on():
    compose = yaml.safe_load(COMPOSE.read_text())
    healthd = compose["services"]["healthd"]
    mounted = {v.split(":")[1]: v.split(":")[0] for v in healthd["volumes"]}
    config_file = healthd["command"][healthd["command"].index("--config") + 1]
    config = tomllib.loads((COMPOSE.parent / mounted[config_file]).read_text())
    port = config.get("server", {}).get("port", 9479)
    assert any(p.split(":")[-1] == str(port) for p in healthd["ports"])
    prometheus = yaml.safe_load((COMPOSE.parent / "prometheus.yml").read_text())
    (scrape,) = [j for j in prometheus["scrape_configs"] if j["job_name"] == "healthd"]
    assert scrape["static_configs"][0]["targets"] == [f"healthd:{port}"]


# --- TLS: what probes and scrapes speak -------------------------------------------------------


def _healthd_tls(path: Path, container: dict[str, Any]) -> bool:
    """Whether a healthd container's configuration (a ConfigMap in its file) serves TLS: its
    ``[server] web_config_file`` names a web configuration with ``tls_server_config``."""
    config_maps = [d for p, d in MANIFESTS if p == path and d["kind"] == "ConfigMap"]
    files = {name: text for cm in config_maps for name, text in cm.get("data", {}).items()}
    args = container.get("args", [])
    config_name = Path(args[args.index("--config") + 1]).name if "--config" in args else None
    if config_name not in files:
        return False
    web = tomllib.loads(files[config_name]).get("server", {}).get("web_config_file")
    if not web:
        return False
    assert Path(web).name in files, f"{path.name}: web_config_file {web} is in no ConfigMap"
    return "tls_server_config" in (yaml.safe_load(files[Path(web).name]) or {})


def _healthd_containers() -> Iterator[tuple[Path, dict[str, Any], dict[str, Any]]]:
    for path, workload, pod in _pod_templates():
        for container in pod["spec"]["containers"]:
            if _from_this_repo(container["image"]):
                yield path, workload, container


def test_a_tls_variant_of_the_sidecar_exists():
    assert any(_healthd_tls(path, c) for path, _, c in _healthd_containers())


def test_probes_and_scrapes_speak_https_to_a_healthd_serving_tls():
    """The kubelet's probes speak plain HTTP unless told ``scheme: HTTPS``: against a TLS
    listener each one fails and the kubelet restarts a healthy container. The same holds for
    Prometheus's scrape (``scheme: https``) and the scrape annotations."""
    for path, workload, container in _healthd_containers():
        tls = _healthd_tls(path, container)
        where = f"{path.name}: {workload['kind']}/{workload['metadata']['name']}"
        probes = [
            container[kind]["httpGet"]
            for kind in ("startupProbe", "livenessProbe", "readinessProbe")
            if "httpGet" in container.get(kind, {})
        ]
        assert probes, where
        for probe in probes:
            assert probe.get("scheme", "HTTP") == ("HTTPS" if tls else "HTTP"), where
        annotations = workload["spec"]["template"]["metadata"].get("annotations", {})
        if "prometheus.io/scrape" in annotations:
            scheme = annotations.get("prometheus.io/scheme", "http")
            assert scheme == ("https" if tls else "http"), where
        for p, monitor in MANIFESTS:
            if p != path or monitor["kind"] != "PodMonitor":
                continue
            for endpoint in monitor["spec"]["podMetricsEndpoints"]:
                assert endpoint.get("scheme", "http") == ("https" if tls else "http"), where
                if tls:
                    assert "tlsConfig" in endpoint, f"{where}: a TLS scrape that trusts nothing"
