"""``python -m healthd.testing.agentcore_events``: the AgentCore emulator with a memory that
has events and a semantic strategy. A module apart from the event plane (the package), which
the emulator imports: the plane does not import the emulator back."""

from __future__ import annotations

import argparse
import sys

from healthd.testing import standin_style
from healthd.testing._agentcore_core import Strategy
from healthd.testing.agentcore import AgentCoreEmulator, indexed_key_option, indexed_keys, serve


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m healthd.testing.agentcore_events",
        description="Serve the AgentCore emulator with a memory that has events and a "
        "semantic strategy (its extraction a deterministic stand-in for the service's model).",
    )
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--memory-id", required=True)
    parser.add_argument("--strategy-id", required=True)
    parser.add_argument("--namespace", default="healthd/{actorId}/facts")
    parser.add_argument("--event-expiry-days", type=int, default=90)
    parser.add_argument("--consolidation-delay", type=float, default=0.0)
    parser.add_argument(
        "--style",
        choices=standin_style.STYLES,
        default=standin_style.DEFAULT_STYLE,
        help="how the stand-in strategy writes records: varied (reworded, merged, implicit, "
        "neighbouring, invented, dropped or stale, as healthd.testing.standin_style documents) "
        "or verbatim (the emulator before styles existed)",
    )
    parser.add_argument("--seed", type=int, default=standin_style.DEFAULT_SEED)
    indexed_key_option(parser)
    args = parser.parse_args(argv)
    try:
        indexed = indexed_keys(args.indexed_key)
    except ValueError as exc:
        parser.error(str(exc))
    emulator = AgentCoreEmulator(port=args.port)
    emulator.events.consolidation_delay = args.consolidation_delay
    emulator.events.style, emulator.events.seed = args.style, args.seed
    emulator.events.configure(
        args.memory_id,
        event_expiry_days=args.event_expiry_days,
        strategies=[Strategy(args.strategy_id, args.namespace)],
        indexed_keys=[{"key": k, "type": t} for k, t in indexed.items()],
    )
    serve(emulator)
    return 0


if __name__ == "__main__":
    sys.exit(main())
