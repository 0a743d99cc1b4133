"""Benchmark: extracting the `git` (and `adr`) timeline from a 20,000-commit repository.

Builds (with ``git fast-import``, in seconds) a repository with realistic churn: services
under ``services/*`` whose source files are edited, added and deleted, dependency manifests
(pyproject.toml, package.json, go.mod, requirements.txt) with version bumps and dropped
dependencies, CODEOWNERS reorganisations, ADRs added and superseded, services rewritten in
another language and removed. Then it times

* the `git` source's full extraction (one ``git log`` stream + one ``git cat-file --batch``),
* the `adr` source's full extraction (when the repository has decision records),
* ``git log --first-parent --raw --no-renames`` over the same first-parent commits (output
  read and discarded),
* the fixed overhead: a first pull of the `git` source in a fresh process, on a repository
  of one commit (what a pull costs whatever the history),

and prints the ratio, and the start time of ``healthd --version`` beside a bare Python's.
Targets: the `git` extraction within 3x of that ``git log`` (on 1,000 commits or more), a
fixed overhead of at most 0.3 s, the CLI up in under 0.2 s. ``--repo PATH`` measures an
existing repository (a real history, e.g. a clone of a public project) instead.

    .venv/bin/python benchmarks/bench_git.py [--commits 20000] [--keep DIR] [--repo PATH]

``--pull-once PATH`` does one full extraction of the `git` source on PATH and exits, to be
timed as a whole process (start-up included) alternately with ``git -C PATH log
--first-parent --raw --no-renames`` by an outside timer (``/usr/bin/time -v`` for each, or
any harness that alternates the two and takes the ratio pair by pair). With ``--no-fold``
it reads the history and the blobs but folds nothing: start-up, git and the reading alone.
"""

from __future__ import annotations

import sys


def pull_once(path: str, *, fold: bool = True) -> int:
    """One full extraction of ``path``'s history (``--pull-once``), then exit."""
    from healthd.sources import build_source

    if not fold:
        from healthd.sources.git import GitExtractor

        GitExtractor.apply = lambda self, commit, changes, emit: []  # type: ignore[method-assign]
    pulled = build_source("git", "bench", {"path": path, "revalidate_clock": "head"}).pull(None)
    assert pulled.error is None, pulled.error
    return 0


def main(argv: list[str]) -> int:
    # `--pull-once PATH [--no-fold]` is read before argparse and the benchmark's body
    # (_bench_git.py) are imported: what an outside timer measures is then the extraction
    # and the interpreter alone, not compiling and importing the harness (about 5 ms)
    plain = len(argv) in (2, 3) and argv[0] == "--pull-once" and argv[2:] in ([], ["--no-fold"])
    if plain and argv[1][:1] not in ("", "-"):  # (any other spelling: argparse reads it)
        return pull_once(argv[1], fold=len(argv) == 2)
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings")
    parser.add_argument("--keep", help="build the repository here and keep it")
    parser.add_argument("--repo", help="measure this existing repository instead")
    parser.add_argument(
        "--pull-once", metavar="PATH", help="one full extraction of PATH's history, then exit"
    )
    parser.add_argument(
        "--no-fold",
        action="store_true",
        help="with --pull-once: read the history and the blobs but fold none of it (what "
        "the pull costs before its first fact: the floor of the extraction as built)",
    )
    args = parser.parse_args(argv)
    if args.pull_once:
        return pull_once(args.pull_once, fold=not args.no_fold)
    from _bench_git import benchmark

    return benchmark(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
