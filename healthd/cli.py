"""Command line: `healthd evaluate`, `healthd timeline`.

Every error healthd knows about ends in one line on stderr and exit code 2, no traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from importlib import resources
from typing import Sequence

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from healthd import __version__
from healthd.errors import HealthdError
from healthd.evaluator import MODES, TargetResult, evaluate
from healthd.exporters.report import render_table, report_json
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
        prog="healthd", description="Does what your assistant remembers still match the project?")
    parser.add_argument("--version", action="version", version=f"healthd {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ev = commands.add_parser("evaluate", help="replay a timeline into memories and score them")
    ev.add_argument("--timeline", metavar="FILE",
                    help="timeline JSONL (default: the bundled example)")
    ev.add_argument("--target", metavar="KIND", action="append",
                    help="memory to evaluate, e.g. reference or 'reference:ttl=off'; "
                         "repeatable (default: reference and naive)")
    ev.add_argument("--mode", choices=MODES, default="incremental",
                    help="full asks every probe at every stage; incremental re-asks only "
                         "probes whose answer may have changed (same numbers)")
    ev.add_argument("--forgetting-window", metavar="N", type=_positive, default=3,
                    help="change points a memory gets to forget an ended fact (default 3)")
    ev.add_argument("--probes", metavar="FILE", help="extra probes, JSONL")
    ev.add_argument("--format", choices=("table", "json"), default="table")
    ev.add_argument("--output", metavar="FILE", help="write the report here instead of stdout")

    tl = commands.add_parser("timeline", help="print a timeline as JSONL")
    tl.add_argument("--timeline", metavar="FILE",
                    help="timeline JSONL (default: the bundled example)")
    return parser


def _cmd_timeline(args: argparse.Namespace) -> int:
    write_timeline(_load_events(args.timeline), sys.stdout)
    return 0


def _cmd_evaluate(args: argparse.Namespace) -> int:
    specs = [parse_target(t) for t in (args.target or DEFAULT_TARGETS)]
    memories = [build_memory(spec) for spec in specs]  # bad switches fail before any work
    events = _load_events(args.timeline)
    extra = load_probe_file(args.probes) if args.probes else []
    probes = build_probe_set(events, extra)
    err = Console(stderr=True)
    show_progress = err.is_terminal and len(events) * len(specs) >= _PROGRESS_MIN_EVENTS
    results: list[TargetResult] = []
    with ExitStack() as stack:
        progress = None
        if show_progress:
            progress = stack.enter_context(Progress(
                TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                TimeRemainingColumn(), console=err, transient=True))
        for spec, memory in zip(specs, memories):
            task = progress.add_task(spec.label, total=len(events)) if progress else None
            on_stage = (lambda _s, t=task: progress.advance(t)) if progress else None
            try:
                results.append(evaluate(
                    events, memory, probes, name=spec.label, kind=spec.kind, mode=args.mode,
                    forgetting_window=args.forgetting_window, on_stage=on_stage))
            finally:
                memory.close()
    with ExitStack() as stack:
        out = stack.enter_context(open(args.output, "w", encoding="utf-8")) if args.output \
            else sys.stdout
        if args.format == "json":
            json.dump(report_json(results, probes.version, len(probes)), out, indent=1)
            out.write("\n")
        else:
            console = Console(file=out, width=110) if args.output or not sys.stdout.isatty() \
                else Console()
            render_table(results, probes.version, len(probes), console)
    return 0


_COMMANDS = {"evaluate": _cmd_evaluate, "timeline": _cmd_timeline}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args)
    except HealthdError as exc:
        print(f"healthd: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return 0
