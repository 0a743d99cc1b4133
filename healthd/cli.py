"""Command line: `healthd evaluate`, `healthd timeline`, `healthd run`, `healthd check-config`,
`healthd report`, `healthd serve-memory`, `healthd healthcheck`.

Every error healthd knows about ends in one line on stderr and exit code 2, no traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, BinaryIO, NamedTuple, TextIO

from healthd.errors import ConfigError, HealthdError, SourceError, shorten

if TYPE_CHECKING:
    from datetime import timedelta

    from healthd.evaluator import TargetResult
    from healthd.memory import Memory, TargetSpec
    from healthd.model import ChangeEvent, FactKey, Probe
    from healthd.people import Person
    from healthd.reading import Reader
    from healthd.settings import Settings
    from healthd.timeline import TimelineCopy

# Everything heavier is imported where it is used, so `healthd --version` starts fast.

DEFAULT_TARGETS = ("reference", "naive")
EXIT_USAGE = 2
_PROGRESS_MIN_EVENTS = 500


def example_timeline_path() -> str:
    from importlib import resources

    return str(resources.files("healthd") / "data" / "example_timeline.jsonl")


def _load_events(path: str | None) -> list[ChangeEvent]:
    from healthd.timeline import DEFAULT_FUTURE_SKEW, read_timeline

    not_after = datetime.now(UTC) + DEFAULT_FUTURE_SKEW
    return read_timeline(path or example_timeline_path(), not_after=not_after)


def _timeline_copy(path: str | None, copy: BinaryIO) -> TimelineCopy:
    from healthd.timeline import DEFAULT_FUTURE_SKEW, TimelineCopy

    not_after = datetime.now(UTC) + DEFAULT_FUTURE_SKEW
    return TimelineCopy(path or example_timeline_path(), copy, not_after=not_after)


def _scratch_store(spec: TargetSpec) -> dict[str, str]:
    """Where a reference memory that `evaluate` replays into keeps its records when it is not
    given a file: a private temporary database, which holds SQLite's page cache in RAM and the
    rest in a file deleted on close, instead of ":memory:", which holds the whole store."""
    path = spec.options.get("path", ":memory:")
    return {"path": ""} if spec.kind == "reference" and path == ":memory:" else {}


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not 0 < value < 86_400:  # (nan fails it too)
        raise argparse.ArgumentTypeError(f"must be above 0 and below a day, got {text}")
    return value


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"must be 0 to 65535, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="healthd", description="Does what your assistant remembers still match the project?"
    )
    from healthd import __version__
    from healthd.evaluator import MODES

    parser.add_argument("--version", action="version", version=f"healthd {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ev = commands.add_parser(
        "evaluate",
        help="replay a timeline into memories and score them",
        description="Replay a timeline (the bundled example by default) into each memory "
        "and print freshness, consistency, coverage, forgetting, contamination and "
        "conflicts at the newest stage.",
    )
    ev.add_argument(
        "--timeline", metavar="FILE", help="timeline JSONL (default: the bundled example)"
    )
    ev.add_argument(
        "--target",
        metavar="KIND",
        action="append",
        help="memory to evaluate, KIND or KIND:switch=value,...; repeatable (default: "
        "reference and naive). Kinds: reference (switches ttl, supersession, propagation = "
        "on/off, grace, top_k, ttl_<domain> = 30d, namespace, path), naive, http "
        "(base_url, namespace, shadow, token_env, top_k, timeout_seconds, max_retries), "
        "mem0 (deployment = local/platform; local: ingest = facts/messages, mode = "
        "native/managed, path, user_id, agent_id, run_id, shadow, top_k, embedder = "
        "minilm/hashing, dimensions, timeout_seconds, sweeps, and a config file's mem0 table for "
        "Memory.from_config; platform, the hosted Mem0 Platform: host or host_env, "
        "api_key_env, org_id, project_id, user_id, agent_id, run_id, shadow, top_k, threshold, "
        "rerank, timeout_seconds, wait_seconds, batch_events, sweeps, max_response_bytes; extra "
        "mem0), "
        "graphiti (ingest = "
        "edges/episodes, search = default/valid, path, group_id, shadow, top_k, embedder = "
        "minilm/hashing, dimensions, sweeps, a [targets.NAME.graphiti] table in config; extra "
        "graphiti), "
        "langmem (namespace, shadow, enable_deletes, model, model_env, model_provider, base_url, "
        "base_url_env, api_key_env, top_k, embedder = minilm/hashing, dimensions, "
        "timeout_seconds, sweeps, and a config file's langmem table: the model, the store "
        "memory/postgres and its index; extra langmem), "
        "zep (a shadow user's graph in Zep through zep-cloud: shadow, user_id, base_url, "
        "base_url_env, api_key_env, episode_type = text/message, scope = edges/nodes, search "
        "= default/valid, reranker, mmr_lambda, top_k, timeout_seconds, wait_seconds, "
        "batch_events, sweeps, max_response_bytes; extra zep), "
        "letta (a shadow agent on a Letta server through letta-client: shadow, agent_name, "
        "base_url, base_url_env, api_key_env, project_id, ingest = messages/passages, model, "
        "embedding, blocks, top_k, max_steps, sweeps, timeout_seconds, max_response_bytes; extra "
        "letta), "
        "agentcore (memory_id, namespace_prefix, shadow, "
        "mode = native/managed/events, region, endpoint_url, strategy_id, record_expiry_days, top_k, "
        "consistency_wait_seconds, batch_events, max_attempts, timeout_seconds; events: actor_id, "
        "isolation_actor_id, control_endpoint_url; extra agentcore), and any a "
        "plugin registers. Any kind takes baseline=on|off: a baseline is meant to fail and is "
        "shown apart (naive is one unless baseline=off); mem0, graphiti, langmem and zep take "
        "the LLM budgets max_llm_calls_per_run and max_llm_tokens_per_day, and sweeps = "
        "subject/each/off (a revalidation sweep told one statement per subject, each fact, or "
        "not at all)",
    )
    ev.add_argument(
        "--mode",
        choices=MODES,
        default=None,
        help="full asks every probe at every stage; incremental re-asks only "
        "probes whose answer may have changed (same numbers; default "
        "incremental)",
    )
    ev.add_argument(
        "--forgetting-window",
        metavar="N",
        type=_positive,
        default=None,
        help="change points a memory gets to forget an ended fact (default 3)",
    )
    ev.add_argument("--probes", metavar="FILE", help="extra probes, JSONL")
    ev.add_argument(
        "--reader",
        metavar="NAME",
        default=None,
        help="how served text is read into facts (default: default, the deterministic "
        "reader; with --config, the configuration's reader); its name and version are part "
        "of the probe set's version",
    )
    ev.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table for people, json for tools (default table)",
    )
    ev.add_argument(
        "--repeats",
        metavar="N",
        type=_positive,
        default=None,
        help="replay each target N times, each into a fresh shadow, and report each "
        "metric's mean, min, max and 95%% interval per stage (default: the target's "
        "repeats option, else 1)",
    )
    ev.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    ev.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML report (charts, final tables, failing probes)",
    )
    ev.add_argument(
        "--config",
        metavar="FILE",
        help="evaluate the configured sources' events against the configured "
        "targets, staleness windows, mode, forgetting window and probe file "
        "(instead of --timeline/--target/--probes)",
    )

    tl = commands.add_parser(
        "timeline",
        help="print a timeline as JSONL",
        description="Print a timeline as JSONL: a file, or the events the configured "
        "sources give, merged by event time.",
    )
    tl.add_argument(
        "--timeline", metavar="FILE", help="timeline JSONL (default: the bundled example)"
    )
    tl.add_argument(
        "--config",
        metavar="FILE",
        help="print the configured sources' events, merged by event time",
    )
    tl.add_argument(
        "--source",
        metavar="NAME",
        help="with a configuration (--config, else the built-in default): only "
        "this source's events",
    )

    rn = commands.add_parser(
        "run",
        help="run the sidecar: scheduled runs, /metrics, /readyz",
        description="Run the sidecar: pull the sources on a schedule, replay what is new into "
        "each target's shadow, and serve /metrics, /healthz, /readyz and a summary at /. "
        "SIGTERM or SIGINT stops it within 10 s.",
    )
    rn.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration (default: $HEALTHD_CONFIG, else the built-in "
        "default: the bundled example against reference and naive, every "
        "minute)",
    )

    rp = commands.add_parser(
        "report",
        help="render a saved --format json report as HTML",
        description="Render a report saved with `evaluate --format json` as one self-contained "
        "HTML file (charts, final tables, failing probes); exit 2 naming what is wrong.",
    )
    rp.add_argument(
        "--from", dest="source", metavar="FILE", required=True, help="a --format json report"
    )
    rp.add_argument("--html", metavar="FILE", required=True, help="the HTML file to write")
    rp.add_argument(
        "--timeline",
        metavar="FILE",
        help="the timeline the report replayed, to name each stage's event on hover",
    )

    sm = commands.add_parser(
        "serve-memory",
        help="serve the reference memory over the HTTP memory contract (docs/memory-http-api.yaml)",
        description="Serve the embedded reference memory over the HTTP memory contract "
        "(docs/memory-http-api.yaml), as a working example of a team's own memory service.",
    )
    sm.add_argument("--port", type=_port, default=8080, help="0 picks a free port (default 8080)")
    sm.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sm.add_argument("--path", metavar="FILE", help="SQLite file (default: in memory)")
    sm.add_argument(
        "--protect",
        metavar="NAMESPACE",
        action="append",
        default=[],
        help="a namespace that exists and is not a shadow: writes to it are refused; repeatable",
    )

    rc = commands.add_parser(
        "reader-check",
        help="score a reader against a labelled set of served items",
        description="Read every item of a labelled set (JSONL; default: the set shipped with "
        "healthd) and print precision and recall per class (asserts, negates, other, unread); "
        "exit 2 naming a malformed line.",
    )
    rc.add_argument("--reader", metavar="NAME", default="default", help="reader (default: default)")
    rc.add_argument("--labelled", metavar="FILE", help="labelled set JSONL (default: bundled)")
    rc.add_argument("--format", choices=("table", "json"), default="table", help="default table")
    rc.add_argument("--show-errors", action="store_true", help="also list every item read wrongly")
    rc.add_argument(
        "--show-all",
        action="store_true",
        help="also list every item's reading (JSON: 'readings', {id, read: {asserts, negates, "
        "other}}; table: every item, wrong ones marked x)",
    )

    cc = commands.add_parser(
        "check-config",
        help="validate a configuration and exit 0 or 2",
        description="Validate a configuration as a run would use it (sources' inputs "
        "included, nothing written); exit 0, or 2 with one line per problem.",
    )
    cc.add_argument(
        "--config", metavar="FILE", help="TOML configuration (default: $HEALTHD_CONFIG)"
    )
    cc.add_argument(
        "--print",
        action="store_true",
        help="print the effective configuration (file, HEALTHD_* overrides and defaults) as "
        "TOML, secrets redacted",
    )
    cc.add_argument(
        "--estimate",
        action="store_true",
        help="also pull the sources and estimate, per target, the events, LLM/embedding calls, "
        "tokens, waits and (with [llm.prices]) money of the first run and of a day "
        "(docs/operating.md#cost-estimate)",
    )
    cc.add_argument(
        "--format",
        choices=("text", "json"),
        default="text",
        help="the estimate's format (default text; json: the figures, on stdout)",
    )

    hc = commands.add_parser(
        "healthcheck",
        help="exit 0 when the running daemon's /healthz answers 200, else 1 (for HEALTHCHECK)",
        description="Ask the running daemon's /healthz at the host and port of its "
        "configuration: --config, else the --config of the `healthd run` process PID (the "
        "container's main process), else $HEALTHD_CONFIG, else the built-in default; "
        "HEALTHD_* variables override it as they do the daemon's. Exit 0 when it answers "
        "200, else 1 with one line.",
    )
    hc.add_argument("--config", metavar="FILE", help="the daemon's TOML configuration")
    hc.add_argument(
        "--pid",
        type=_positive,
        default=1,
        help="the `healthd run` process whose --config to read (default 1)",
    )
    hc.add_argument(
        "--timeout",
        type=_seconds,
        default=4.0,
        metavar="SECONDS",
        help="how long to wait for the answer (default 4)",
    )
    return parser


def _cmd_healthcheck(args: argparse.Namespace) -> int:
    from healthd.daemon.healthcheck import check, client_context, config_of_process, healthz_url
    from healthd.daemon.webconfig import load_web_config
    from healthd.settings import config_path, load_server_settings

    path = config_path(args.config or config_of_process(args.pid))
    try:
        # only [server]: a mistake elsewhere that a reload refused leaves the daemon healthy
        listener = load_server_settings(path)
        # a TLS listener is asked over HTTPS, trusting the certificate it is configured with
        context = client_context(load_web_config(listener.web_config_file))
    except HealthdError as exc:
        print(f"healthd: unhealthy: {shorten(str(exc).splitlines()[0], 500)}", file=sys.stderr)
        return 1
    problem = check(healthz_url(listener, tls=context is not None), args.timeout, context)
    if problem:
        print(f"healthd: unhealthy: {problem}", file=sys.stderr)
        return 1
    return 0


def _cmd_timeline(args: argparse.Namespace) -> int:
    from healthd.timeline import write_timeline

    if args.config or args.source:
        if args.timeline:
            raise ConfigError("--timeline and --config/--source cannot be used together")
        from healthd.settings import load_settings

        settings = load_settings(args.config)
        write_timeline(configured_events(settings, only=args.source), sys.stdout)
        return 0
    write_timeline(_load_events(args.timeline), sys.stdout)
    return 0


def configured_events(settings: Settings, only: str | None = None) -> list[ChangeEvent]:
    """Every event the configured sources give from the start, merged by event time (each
    source keeping its own arrival order), as the daemon replays them in one run."""
    return configured_pull(settings, only)[0]


def configured_pull(
    settings: Settings, only: str | None = None
) -> tuple[list[ChangeEvent], list[Person]]:
    """:func:`configured_events`, and the identity records the sources know (a Backstage
    User's profile, CODEOWNERS' handles and e-mails) for the reader's people table. The
    pulls together take at most ``run_timeout``, as a daemon's run does."""
    from healthd._stop import run_deadline
    from healthd.settings import duration_text

    bound = f"run_timeout={duration_text(settings.run_timeout)}"
    with run_deadline(settings.run_timeout.total_seconds(), bound):
        return _configured_pull(settings, only)


def _configured_pull(
    settings: Settings, only: str | None
) -> tuple[list[ChangeEvent], list[Person]]:
    from healthd.sources import build_source, kept_repeat_places, pull_from_start, unique_events
    from healthd.sources._merge import merge_sources
    from healthd.timeline import admitted

    if only is not None and only not in settings.sources:
        raise ConfigError(
            f"--source {only!r}: no such source in the configuration; "
            f"configured: {', '.join(sorted(settings.sources))}"
        )
    named: list[tuple[str, list[ChangeEvent]]] = []
    people: list[Person] = []
    for name, cfg in settings.sources.items():
        if only is not None and name != only:
            continue
        try:
            result = pull_from_start(build_source(cfg.kind, name, cfg.options))
        except HealthdError:
            raise
        except Exception as exc:
            raise SourceError(f"source {name!r}: {type(exc).__name__}: {exc}") from None
        if result.error:
            raise SourceError(f"source {name!r}: {result.error}")
        not_after = datetime.now(UTC) + settings.max_future_skew
        kept = admitted(result.events, result.skipped, not_after)
        # (a file read in several pieces meets a repeated id only here: said as within one)
        places = kept_repeat_places(result.events, kept, result.repeat_places)
        events, _repeats = unique_events(kept, f"source {name!r}", result.skipped, places)
        for reason in result.skipped:  # the daemon logs these; a one-shot run says them too
            print(f"healthd: warning: source {name!r}: {reason}", file=sys.stderr)
        if result.skipped:
            print(
                f"healthd: warning: source {name!r}: {len(result.skipped)} input(s) skipped",
                file=sys.stderr,
            )
        named.append((name, events))
        people += result.people or []
    conflicts: list[str] = []
    merged = merge_sources(named, conflicts)
    for conflict in conflicts:
        print(f"healthd: warning: {conflict}", file=sys.stderr)
    return merged, people


class _Configured(NamedTuple):
    """What `evaluate --config` takes from the configuration, its sources pulled."""

    specs: list[TargetSpec]
    memories: list[Memory]
    events: list[ChangeEvent]
    extra: list[Probe]
    windows: dict[str, timedelta]
    reader: Reader  # the configuration's, or --reader's; built before any source is pulled
    runbook_url: str | None


def _evaluate_configured(args: argparse.Namespace) -> _Configured:
    from healthd.memory import TargetSpec, build_memory
    from healthd.probes import load_probe_file
    from healthd.reading import build_reader, with_people
    from healthd.settings import load_settings

    if args.timeline or args.target or args.probes:
        raise ConfigError(
            "--config cannot be combined with --timeline, --target or --probes "
            "(they come from the configuration)"
        )
    settings = load_settings(args.config)
    if args.mode is None:
        args.mode = settings.mode
    if args.forgetting_window is None:
        args.forgetting_window = settings.forgetting_window
    reader = build_reader(args.reader or settings.reader)
    specs: list[TargetSpec] = []
    memories: list[Memory] = []
    for name, target in settings.targets.items():
        options = dict(target.options)
        if "path" in options:
            options["path"] = ":memory:"  # never touch a daemon's persistent shadow
        spec = TargetSpec(target.kind, options, name, target.baseline)
        specs.append(spec)
        memories.append(build_memory(spec, **_scratch_store(spec)))
    events, people = configured_pull(settings)
    extra = load_probe_file(settings.probes) if settings.probes else []
    windows = {str(domain): window for domain, window in settings.staleness.windows().items()}
    # the sources' identity records: "Kim Lee" read as the CODEOWNERS' @klee
    reader = with_people(reader, people)
    return _Configured(specs, memories, events, extra, windows, reader, settings.runbook_url)


def _cmd_run(args: argparse.Namespace) -> int:
    from healthd.daemon.app import run
    from healthd.settings import config_path, load_settings

    return run(load_settings(config_path(args.config)))


def _cmd_check_config(args: argparse.Namespace) -> int:
    from healthd.settings import config_path, load_settings

    if args.print and (args.estimate or args.format != "text"):
        raise ConfigError("--print prints the configuration alone; leave out --estimate/--format")
    path = config_path(args.config)
    settings = load_settings(path, reach=True)
    if args.print:
        from healthd.settings import effective_toml

        sys.stdout.write(effective_toml(settings))
        return 0
    ok = (
        f"{path or '(built-in defaults)'}: ok: {len(settings.sources)} source(s) "
        f"({', '.join(sorted(settings.sources))}), {len(settings.targets)} target(s) "
        f"({', '.join(sorted(settings.targets))}), schedule {settings.schedule.cron!r}"
    )
    if not args.estimate:
        if args.format != "text":
            raise ConfigError("--format json goes with --estimate")
        print(ok)
        return 0
    from healthd._estimate_cli import configured_estimate
    from healthd.estimate import render

    data = configured_estimate(settings, configured_pull(settings)[0])
    if args.format == "json":
        import json

        print(json.dumps(data, indent=1))
    else:
        print(ok)
        print("\n".join(render(data)))
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from healthd.report import check_writable, load_report, report_pieces, write_html
    from healthd.timeline import read_timeline

    check_writable(args.html)
    report = load_report(args.source)
    events = read_timeline(args.timeline) if args.timeline else []
    write_html(args.html, report_pieces(report, events=events))
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            """Let :func:`main` handle a closed pipe like every other command (rich exits 1)."""
            self.quiet = True
            raise BrokenPipeError

    from healthd._collector import one_off_collection
    from healthd.evaluator import StageResult, evaluate
    from healthd.exporters.report import (
        StageSampler,
        StageSpool,
        metrics_json,
        render_table,
        report_json,
        write_report_json,
    )
    from healthd.memory import EventExpiryReporting, build_memory, parse_target
    from healthd.probes import build_probe_set, load_probe_file
    from healthd.reading import build_reader, versioned
    from healthd.repeats import Repeats
    from healthd.scoring import DEFAULT_WINDOWS

    windows: dict[str, timedelta] | None = None
    runbook_url: str | None = None  # the configuration's, for the verdict's links
    if args.html:
        from healthd.report import check_writable

        check_writable(args.html)
    listed: list[ChangeEvent] = []  # the configured sources' events, all at once
    named: list[ChangeEvent] = []  # the events the HTML report's charts name
    multi_valued: set[FactKey] = set()  # keys holding several values, for the HTML report
    with ExitStack() as files, ExitStack() as stack:
        # the process ends after the report: see healthd._collector
        files.enter_context(one_off_collection())
        events: Iterable[ChangeEvent]
        if args.config:
            configured = _evaluate_configured(args)
            specs, memories, listed, extra, windows = configured[:5]
            reader, runbook_url = configured.reader, configured.runbook_url
            probes = build_probe_set(listed, extra)
            events, count = listed, len(listed)
        else:
            reader = build_reader(args.reader or "default")
            if args.mode is None:
                args.mode = "incremental"
            if args.forgetting_window is None:
                args.forgetting_window = 3
            specs = [parse_target(t) for t in (args.target or DEFAULT_TARGETS)]
            # bad switches fail before any work
            memories = [build_memory(spec, **_scratch_store(spec)) for spec in specs]
            extra = load_probe_file(args.probes) if args.probes else []
            # Read once to check it and find the probes, then replayed from a private copy
            # for each target: the events are never all held at once.
            copy = files.enter_context(tempfile.TemporaryFile("w+b"))
            timeline = _timeline_copy(args.timeline, copy)
            probes = build_probe_set(timeline.read(), extra)
            count = len(timeline)
            events = timeline
        roles = {spec.label: spec.role for spec in specs}
        if not count:
            where = args.timeline or ("the configured sources" if args.config else "the timeline")
            raise HealthdError(f"timeline is empty: {where} gave no event to replay")
        err = Console(stderr=True)
        show_progress = err.is_terminal and count * len(specs) >= _PROGRESS_MIN_EVENTS
        results: list[TargetResult] = []
        spools: list[StageSpool] = []
        # Stages are spooled to a file for JSON, downsampled as they come for HTML, and not
        # kept at all for the table: memory stays bounded whatever the timeline's length.
        samplers: list[StageSampler] = []
        progress = None
        if show_progress:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeRemainingColumn,
            )

            progress = stack.enter_context(
                Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeRemainingColumn(),
                    console=err,
                    transient=True,
                )
            )
        version = versioned(probes.version, reader)
        for spec, memory in zip(specs, memories, strict=False):
            task = progress.add_task(spec.label, total=count) if progress else None
            spool = StageSpool(files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8")))
            spools.append(spool)
            keep = spool.add if args.format == "json" else None
            sample = None
            if args.html:
                samplers.append(StageSampler(count, len(specs)))
                sample = samplers[-1].add

            repeats = Repeats(args.repeats or spec.repeats)

            def spread(stage: StageResult, repeats: Repeats = repeats) -> None:
                repeats.add_stage(stage.index, metrics_json(stage.metrics))

            def on_stage(
                stage: StageResult,
                task: Any = task,
                keep: Any = keep,
                sample: Any = sample,
                repeats: Repeats = repeats,
            ) -> None:
                if repeats.n > 1:
                    repeats.add_stage(stage.index, metrics_json(stage.metrics))
                if keep is not None:
                    keep(stage)
                if sample is not None:
                    sample(stage)
                if progress is not None:
                    progress.advance(task)

            try:
                for replay in range(repeats.n):
                    result = evaluate(
                        events,
                        memory,
                        probes,
                        name=spec.label,
                        kind=spec.kind,
                        mode=args.mode,
                        forgetting_window=args.forgetting_window,
                        keep_stages=False,
                        on_stage=on_stage if replay == 0 else spread,
                        windows=windows if windows is not None else DEFAULT_WINDOWS,
                        reader=reader,
                    )
                    repeats.add_final(metrics_json(result.metrics))
                    if replay == 0:
                        results.append(result)
                    else:  # the calls of every replay (the block counts on)
                        results[-1].llm = result.llm
                if repeats.n > 1:
                    results[-1].repeats = repeats.as_json()
                if isinstance(memory, EventExpiryReporting):
                    results[-1].event_expiry = memory.event_expiry_report()
            finally:
                memory.close()
        stack.close()  # the progress display ends before the report is written
        out = files.enter_context(_open_output(args.output)) if args.output else sys.stdout
        if args.format == "json":
            write_report_json(out, results, spools, version, len(probes), roles)
        else:
            console = (
                _Console(file=out, width=110)
                if args.output or not sys.stdout.isatty()
                else _Console()
            )
            render_table(results, version, len(probes), console)
        if args.html:
            # the events the charts name, and the keys holding several values, read again
            wanted = set().union(*(sampler.event_ids() for sampler in samplers))
            for event in events:
                if event.multi_valued:
                    multi_valued.add(event.fact.key)
                if event.id in wanted:
                    named.append(event)
    if args.html:
        from healthd.report import write_html
        from healthd.report.html import document_pieces
        from healthd.report.view import page_model

        report = report_json(results, version, len(probes), roles, probe_views=True)
        for target, sampler in zip(report["targets"], samplers, strict=True):
            sampler.fill(target)
        model = page_model(
            report,
            events=named,
            multi_valued=multi_valued,
            windows=windows or DEFAULT_WINDOWS,
            target_options={spec.label: spec.options for spec in specs},
            title="healthd report",
            runbook_url=runbook_url,
        )
        # what the page was built from is let go before it is written out: the text is the
        # peak's last step, and may take the place of all of it
        del report, results, samplers, named, multi_valued, probes
        write_html(args.html, document_pieces(model))
    return 0


def _open_output(path: str) -> TextIO:
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise HealthdError(f"{path}: cannot write the report: {exc.strerror}") from None


def _cmd_reader_check(args: argparse.Namespace) -> int:
    import json

    from healthd.reading import build_reader
    from healthd.reading.labelled import check_reader, format_check, load_labelled

    reader = build_reader(args.reader)
    items = load_labelled(args.labelled)
    result = check_reader(reader, items)
    if args.format == "json":
        json.dump(result.as_dict(show_all=args.show_all), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(format_check(result, show_errors=args.show_errors, show_all=args.show_all))
    return 0


def _cmd_serve_memory(args: argparse.Namespace) -> int:
    from healthd.memory_server import serve

    return serve(host=args.host, port=args.port, path=args.path, protected=args.protect)


_COMMANDS = {
    "evaluate": _cmd_evaluate,
    "timeline": _cmd_timeline,
    "run": _cmd_run,
    "check-config": _cmd_check_config,
    "report": _cmd_report,
    "serve-memory": _cmd_serve_memory,
    "reader-check": _cmd_reader_check,
    "healthcheck": _cmd_healthcheck,
}


def _stdout_to_devnull() -> None:
    """Send what stdout still holds nowhere, so the flush at exit does not fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--version"]:
        from healthd import __version__

        print(f"healthd {__version__}")
        return 0
    args = build_parser().parse_args(argv)
    from healthd.logging import CurrentStderr, configure_logging, redact_text

    if args.command != "run":  # stdout carries the report or the timeline; logs go beside it
        configure_logging(
            "warning",
            "auto",
            stream=CurrentStderr(),  # type: ignore[arg-type]
            defer=True,
        )
    try:
        code = _COMMANDS[args.command](args)
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # the reader went away (`healthd evaluate | head -1`): stop quietly, as Unix tools do
        _stdout_to_devnull()
        return 0
    except OSError as exc:  # a disk full under --output or the redirected stdout
        _stdout_to_devnull()
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"healthd: error: {redact_text(f'{where}{exc.strerror or exc}')}", file=sys.stderr)
        return 1
    except HealthdError as exc:
        # one line per problem, each with the same prefix (grep-able, as the first)
        for line in shorten(redact_text(str(exc)), 4000).splitlines() or [""]:
            print(f"healthd: error: {line}", file=sys.stderr)
        return EXIT_USAGE
