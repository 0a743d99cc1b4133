"""Command line: `healthd evaluate`, `healthd timeline`, `healthd run`, `healthd check-config`.

Every error healthd knows about ends in one line on stderr and exit code 2, no traceback.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence
from contextlib import ExitStack
from importlib import resources
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from healthd import __version__
from healthd.errors import ConfigError, HealthdError, SourceError
from healthd.evaluator import MODES, StageResult, TargetResult, evaluate
from healthd.exporters.report import StageSpool, render_table, write_report_json
from healthd.logging import CurrentStderr, configure_logging, redact_text
from healthd.memory import build_memory, parse_target
from healthd.model import ChangeEvent
from healthd.probes import build_probe_set, load_probe_file
from healthd.timeline import read_timeline, write_timeline

DEFAULT_TARGETS = ("reference", "naive")
EXIT_USAGE = 2
_PROGRESS_MIN_EVENTS = 500


def example_timeline_path() -> str:
    return str(resources.files("healthd") / "data" / "example_timeline.jsonl")


def _load_events(path: str | None) -> list[ChangeEvent]:
    return read_timeline(path or example_timeline_path())


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="healthd", description="Does what your assistant remembers still match the project?"
    )
    parser.add_argument("--version", action="version", version=f"healthd {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ev = commands.add_parser("evaluate", help="replay a timeline into memories and score them")
    ev.add_argument(
        "--timeline", metavar="FILE", help="timeline JSONL (default: the bundled example)"
    )
    ev.add_argument(
        "--target",
        metavar="KIND",
        action="append",
        help="memory to evaluate, e.g. reference or 'reference:ttl=off'; "
        "repeatable (default: reference and naive)",
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
    ev.add_argument("--format", choices=("table", "json"), default="table")
    ev.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")
    ev.add_argument(
        "--config",
        metavar="FILE",
        help="evaluate the configured sources' events against the configured "
        "targets, staleness windows, mode, forgetting window and probe file "
        "(instead of --timeline/--target/--probes)",
    )

    tl = commands.add_parser("timeline", help="print a timeline as JSONL")
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

    rn = commands.add_parser("run", help="run the sidecar: scheduled runs, /metrics, /readyz")
    rn.add_argument(
        "--config",
        metavar="FILE",
        help="TOML configuration (default: $HEALTHD_CONFIG, else the built-in "
        "default: the bundled example against reference and naive, every "
        "minute)",
    )

    cc = commands.add_parser("check-config", help="validate a configuration and exit 0 or 2")
    cc.add_argument(
        "--config", metavar="FILE", help="TOML configuration (default: $HEALTHD_CONFIG)"
    )
    return parser


def _cmd_timeline(args: argparse.Namespace) -> int:
    if args.config or args.source:
        if args.timeline:
            raise ConfigError("--timeline and --config/--source cannot be used together")
        from healthd.settings import load_settings

        settings = load_settings(args.config)
        write_timeline(configured_events(settings, only=args.source), sys.stdout)
        return 0
    write_timeline(_load_events(args.timeline), sys.stdout)
    return 0


def configured_events(settings, only: str | None = None) -> list[ChangeEvent]:
    """Every event the configured sources give from the start, merged by event time (each
    source keeping its own arrival order), as the daemon replays them in one run."""
    from healthd.sources import build_source
    from healthd.sources._merge import merge_timelines

    if only is not None and only not in settings.sources:
        raise ConfigError(
            f"--source {only!r}: no such source in the configuration; "
            f"configured: {', '.join(sorted(settings.sources))}"
        )
    lists = []
    for name, cfg in settings.sources.items():
        if only is not None and name != only:
            continue
        result = build_source(cfg.kind, name, cfg.options).pull(None)
        if result.error:
            raise SourceError(f"source {name!r}: {result.error}")
        seen: set[str] = set()
        lists.append([e for e in result.events if not (e.id in seen or seen.add(e.id))])
    return merge_timelines(*lists)


def _evaluate_configured(args: argparse.Namespace):
    from healthd.memory import TargetSpec
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
    specs, memories = [], []
    for name, target in settings.targets.items():
        options = dict(target.options)
        if "path" in options:
            options["path"] = ":memory:"  # never touch a daemon's persistent shadow
        spec = TargetSpec(target.kind, options, name)
        specs.append(spec)
        memories.append(build_memory(spec))
    events = configured_events(settings)
    extra = load_probe_file(settings.probes) if settings.probes else []
    return specs, memories, events, extra, settings.staleness.windows()


def _cmd_run(args: argparse.Namespace) -> int:
    from healthd.daemon.app import run
    from healthd.settings import config_path, load_settings

    return run(load_settings(config_path(args.config)))


def _cmd_check_config(args: argparse.Namespace) -> int:
    from healthd.settings import config_path, load_settings

    path = config_path(args.config)
    settings = load_settings(path)
    print(
        f"{path or '(built-in defaults)'}: ok: {len(settings.sources)} source(s) "
        f"({', '.join(sorted(settings.sources))}), {len(settings.targets)} target(s) "
        f"({', '.join(sorted(settings.targets))}), schedule {settings.schedule.cron!r}"
    )
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    windows = None
    if args.config:
        specs, memories, events, extra, windows = _evaluate_configured(args)
    else:
        if args.mode is None:
            args.mode = "incremental"
        if args.forgetting_window is None:
            args.forgetting_window = 3
        specs = [parse_target(t) for t in (args.target or DEFAULT_TARGETS)]
        memories = [build_memory(spec) for spec in specs]  # bad switches fail before any work
        events = _load_events(args.timeline)
        extra = load_probe_file(args.probes) if args.probes else []
    probes = build_probe_set(events, extra)
    err = Console(stderr=True)
    show_progress = err.is_terminal and len(events) * len(specs) >= _PROGRESS_MIN_EVENTS
    results: list[TargetResult] = []
    spools: list[StageSpool] = []
    with ExitStack() as files, ExitStack() as stack:
        progress = None
        if show_progress:
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
        for spec, memory in zip(specs, memories, strict=False):
            task = progress.add_task(spec.label, total=len(events)) if progress else None
            # Stages go to a spool file for JSON and are not kept at all for the table.
            spool = StageSpool(files.enter_context(tempfile.TemporaryFile("w+", encoding="utf-8")))
            spools.append(spool)
            keep = spool.add if args.format == "json" else None

            def on_stage(stage: StageResult, task: Any = task, keep: Any = keep) -> None:
                if keep is not None:
                    keep(stage)
                if progress is not None:
                    progress.advance(task)

            try:
                results.append(
                    evaluate(
                        events,
                        memory,
                        probes,
                        name=spec.label,
                        kind=spec.kind,
                        mode=args.mode,
                        forgetting_window=args.forgetting_window,
                        keep_stages=False,
                        on_stage=on_stage,
                        **({"windows": windows} if windows is not None else {}),
                    )
                )
            finally:
                memory.close()
        stack.close()  # the progress display ends before the report is written
        out = files.enter_context(_open_output(args.output)) if args.output else sys.stdout
        if args.format == "json":
            write_report_json(out, results, spools, probes.version, len(probes))
        else:
            console = (
                Console(file=out, width=110)
                if args.output or not sys.stdout.isatty()
                else Console()
            )
            render_table(results, probes.version, len(probes), console)
    return 0


def _open_output(path: str):
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as exc:
        raise HealthdError(f"{path}: cannot write the report: {exc.strerror}") from None


_COMMANDS = {
    "evaluate": _cmd_evaluate,
    "timeline": _cmd_timeline,
    "run": _cmd_run,
    "check-config": _cmd_check_config,
}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command != "run":  # stdout carries the report or the timeline; logs go beside it
        configure_logging("warning", "auto", stream=CurrentStderr())  # type: ignore[arg-type]
    try:
        return _COMMANDS[args.command](args)
    except HealthdError as exc:
        print(f"healthd: error: {redact_text(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
