"""Run a command with the stand-in LLM (healthd.testing.standin_llm, not a model) serving the
TEAM_LLM_* and TEAM_EMBEDDING_* variables that config/mem0-team.toml reads, then stop it.

    python scripts/with_standin_llm.py healthd evaluate --config config/mem0-team.toml
    python scripts/with_standin_llm.py --style verbatim healthd evaluate --config ...

Chat completions are answered by the stand-in's responders (deterministic, not a model) in a
style: ``varied`` (the default: memories reworded, merged, with implicit subjects, neighbouring
subjects, invented values, dropped or stale facts, as healthd.testing.standin_style documents)
or ``verbatim`` (the stand-in before styles existed); ``--seed N`` varies the varied draws;
``--noise SHARE`` (0..1) writes that share of the memories otherwise on each replay of the
same turns (``evaluate --repeats``; Mem0's prompt).
Embeddings are the real all-MiniLM-L6-v2. Figures computed this way are labelled "(stand-in
LLM)", and with ``varied`` "stand-in style varied".
At the end it prints, on stderr, the requests it received by path: what the report's `llm`
blocks (summed over the targets) count.
"""

from __future__ import annotations

import os
import subprocess
import sys

from healthd.testing.standin_llm import MINILM_MODELS, StandInLLM
from healthd.testing.standin_style import DEFAULT_SEED, DEFAULT_STYLE, STYLES


def main(argv: list[str]) -> int:
    style, seed, noise = DEFAULT_STYLE, DEFAULT_SEED, 0.0
    while argv[:1] and argv[0] in ("--style", "--seed", "--noise"):
        if len(argv) < 2:
            print(f"with_standin_llm: {argv[0]} needs a value", file=sys.stderr)
            return 2
        if argv[0] == "--style":
            style = argv[1]
            if style not in STYLES:
                print(
                    f"with_standin_llm: --style must be one of {', '.join(STYLES)}", file=sys.stderr
                )
                return 2
        elif argv[0] == "--noise":
            try:
                noise = float(argv[1])
            except ValueError:
                noise = -1.0
            if not 0.0 <= noise <= 1.0:
                print(
                    f"with_standin_llm: --noise {argv[1]!r} is not a share from 0 to 1",
                    file=sys.stderr,
                )
                return 2
        else:
            try:
                seed = int(argv[1])
            except ValueError:
                print(
                    f"with_standin_llm: --seed {argv[1]!r} is not a whole number", file=sys.stderr
                )
                return 2
        argv = argv[2:]
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with StandInLLM(style=style, seed=seed, noise=noise) as llm:
        env = dict(
            os.environ,
            TEAM_LLM_BASE_URL=llm.base_url,
            TEAM_LLM_MODEL="healthd-standin",
            TEAM_LLM_API_KEY="standin-not-a-secret",
            TEAM_EMBEDDING_BASE_URL=llm.base_url,
            TEAM_EMBEDDING_MODEL=MINILM_MODELS[0],
        )
        code = subprocess.run(argv, check=False, env=env).returncode
        # the stand-in's own log, what the report's `llm` blocks are checked against
        received = ", ".join(f"{n} {path}" for path, n in llm.counts().items()) or "none"
        print(f"stand-in LLM: requests received: {received}", file=sys.stderr)
        return code


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
