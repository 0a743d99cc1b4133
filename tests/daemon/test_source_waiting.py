"""A source no pull of has ended yet is waiting, not down: `healthd_source_pulled` says
which, so that HealthdSourceDown does not page for a daemon started with run_on_start =
false on an hourly schedule (or a source a reload added) before its first pull."""

from __future__ import annotations

from daemon_helpers import free_port, sample, start_daemon, toml_config

__all__ = ["start_daemon"]  # the fixture


def test_a_source_not_pulled_yet_is_said_to_be_waiting_then_pulled(start_daemon, tmp_path):
    port = free_port()
    waiting = toml_config(tmp_path, port=port, cron="@hourly")
    waiting.write_text(waiting.read_text().replace("run_on_start = true", "run_on_start = false"))
    daemon = start_daemon(waiting, port=port)
    metrics = daemon.wait_until(daemon.scrape, what="a first scrape")
    assert sample(metrics, "healthd_source_up", source="example") == 0  # as before: not missing
    assert sample(metrics, "healthd_source_pulled", source="example") == 0
    assert daemon.stop()[0] == 0

    pulling = start_daemon(toml_config(tmp_path, port=port), port=port, log_name="second.log")
    metrics = pulling.wait_runs("reference")
    assert sample(metrics, "healthd_source_up", source="example") == 1
    assert sample(metrics, "healthd_source_pulled", source="example") == 1
