"""The daemon reads people as its sources name them (issue 38, item 3): CODEOWNERS' @klee
and the Backstage User klee's profile ("Kim Lee") make one person, so a team memory saying
"Kim Lee owns checkout" is scored current; the identity records are kept in the state file,
so a restart reads (and fingerprints) as the run before it did."""

from __future__ import annotations

from daemon_helpers import sample, toml_config
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from people_repo import OWNERS, SAYS, make_repo, sources, team
from text_memory_service import TextMemoryService

from healthd.daemon.runner import Runner
from healthd.daemon.state import StateStore
from healthd.exporters.tracing import build_tracer_provider, get_tracer
from healthd.reading.aliases import Person
from healthd.settings import load_settings


def test_a_daemon_scores_a_display_name_as_the_codeowners_handle(start_daemon, tmp_path):
    repo = make_repo(tmp_path / "repo")
    with TextMemoryService(silent_on={OWNERS}, says={OWNERS: SAYS}) as service:
        daemon = start_daemon(sources=sources(repo), targets={"team": team(service)})
        daemon.wait_ready(timeout=60)
        metrics = daemon.wait_runs("team", timeout=60)
        for name in ("healthd_consistency_ratio", "healthd_coverage_ratio"):
            assert sample(metrics, name, target="team", domain="ownership") == 1.0, name
        assert "default-9:people=" in daemon.get("/metrics").text
        assert daemon.stop()[0] == 0


def test_the_people_survive_a_restart_and_a_changed_profile_re_baselines(tmp_path):
    repo = make_repo(tmp_path / "repo")
    tracer = get_tracer(build_tracer_provider(exporter=InMemorySpanExporter()))
    with TextMemoryService(silent_on={OWNERS}, says={OWNERS: SAYS}) as service:
        targets = {"team": team(service), "reference": {"kind": "reference", "shadow": True}}
        settings = load_settings(
            str(toml_config(tmp_path, port=1, sources=sources(repo), targets=targets))
        )
        state = StateStore(settings.state_path)
        runner = Runner(settings, state, tracer)
        assert runner.reader.label == "default-9"  # nothing pulled yet
        runner.run_once()
        label = runner.reader.label
        assert label.startswith("default-9:people=")
        fingerprints = {t.name: t.row.fingerprint for t in runner.targets.values()}
        runner.close()
        state.close()

        state = StateStore(settings.state_path)
        assert state.people()["catalog"] == [Person("klee", ("Kim Lee",), ("kim.lee@acme.io",))]
        runner = Runner(settings, state, tracer)
        try:
            assert runner.reader.label == label
            assert {t.name: t.fingerprint for t in runner.targets.values()} == fingerprints
            run = runner.run_once()
            assert run is not None and run.targets["team"]["result"] == "success"
            assert runner.targets["team"].row.results["reader"] == label
            # the same records again: no new baseline
            assert runner.targets["reference"].fingerprint == fingerprints["reference"]
            # a profile that names the person otherwise is a changed reader: a fresh replay
            (repo / "catalog-info.yaml").write_text(
                (repo / "catalog-info.yaml").read_text().replace("Kim Lee", "Kimberly Lee")
            )
            from people_repo import _git

            _git(repo, "commit", "-q", "-am", "a new display name")
            runner.run_once()
            assert runner.reader.label not in (label, "default-9")
            assert runner.targets["reference"].row.fingerprint != fingerprints["reference"]
        finally:
            runner.close()
            state.close()
