"""The body of benchmarks/bench_git.py (building the repository, timing the extraction
against `git log`), imported only when the whole benchmark runs: a ``--pull-once`` process
neither compiles nor imports it."""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from healthd.sources import build_source

if TYPE_CHECKING:
    import argparse

START = 1_600_000_000  # 2020-09-13
LANGS = {"python": ".py", "go": ".go", "javascript": ".js", "typescript": ".ts", "rust": ".rs"}
MANIFEST = {
    "python": "pyproject.toml",
    "go": "go.mod",
    "javascript": "package.json",
    "typescript": "package.json",
    "rust": "Cargo.toml",
}
PKGS = [
    "requests",
    "flask",
    "sqlalchemy",
    "pydantic",
    "redis",
    "kafka",
    "grpc",
    "uuid",
    "zap",
    "gin",
    "express",
    "react",
    "lodash",
    "serde",
    "tokio",
    "clap",
    "axum",
    "jest",
]


def manifest(lang: str, deps: dict[str, str]) -> str:
    if lang == "python":
        items = ", ".join(f'"{k}>={v}"' for k, v in sorted(deps.items()))
        return f'[project]\nname = "svc"\ndependencies = [{items}]\n'
    if lang == "go":
        body = "".join(f"\tgithub.com/x/{k} v{v}\n" for k, v in sorted(deps.items()))
        return f"module svc\n\ngo 1.22\n\nrequire (\n{body})\n"
    if lang == "rust":
        body = "".join(f'{k} = "{v}"\n' for k, v in sorted(deps.items()))
        return f'[package]\nname = "svc"\n\n[dependencies]\n{body}'
    return (
        json.dumps(
            {"name": "svc", "dependencies": {k: f"^{v}" for k, v in sorted(deps.items())}}, indent=2
        )
        + "\n"
    )


class Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.services: dict[str, dict] = {}
        self.adrs: dict[int, tuple[str, str]] = {}  # number → (path, status)
        self.owners: dict[str, str] = {}
        self.counter = 0

    def new_service(self, ops: list, name: str | None = None) -> None:
        rng = self.rng
        name = name or f"svc{len(self.services):03d}"
        lang = rng.choice(list(LANGS))
        svc = {"lang": lang, "files": [], "deps": {}}
        self.services[name] = svc
        for _ in range(rng.randint(5, 25)):
            self.add_file(ops, name)
        for pkg in rng.sample(PKGS, rng.randint(2, 6)):
            svc["deps"][pkg] = f"1.{rng.randint(0, 9)}.0"
        ops.append(("M", f"services/{name}/{MANIFEST[lang]}", manifest(lang, svc["deps"])))
        self.owners[f"/services/{name}/"] = f"@team-{rng.randint(1, 12)}"

    def add_file(self, ops: list, name: str) -> None:
        svc = self.services[name]
        self.counter += 1
        path = f"services/{name}/src/m{self.counter}{LANGS[svc['lang']]}"
        svc["files"].append(path)
        ops.append(("M", path, f"// {self.counter}\n" * 3))

    def codeowners(self) -> str:
        return "* @platform\n" + "".join(f"{p} {o}\n" for p, o in sorted(self.owners.items()))

    def adr_text(self, n: int, title: str, status: str) -> str:
        return f"# {n}. {title}\n\nDate: 2021-01-01\n\n## Status\n\n{status}\n\n## Context\n\nx\n"

    def commit_ops(self, i: int) -> list:
        rng = self.rng
        ops: list = []
        roll = rng.random()
        names = list(self.services)
        name = rng.choice(names)
        svc = self.services[name]
        if roll < 0.70 and svc["files"]:
            for path in rng.sample(svc["files"], min(len(svc["files"]), rng.randint(1, 3))):
                ops.append(("M", path, f"// edit {i}\n" * rng.randint(1, 5)))
        elif roll < 0.80:
            for _ in range(rng.randint(1, 3)):
                self.add_file(ops, name)
        elif roll < 0.85 and len(svc["files"]) > 3:
            path = svc["files"].pop(rng.randrange(len(svc["files"])))
            ops.append(("D", path, None))
        elif roll < 0.93:
            deps = svc["deps"]
            if deps and rng.random() < 0.15:
                deps.pop(rng.choice(sorted(deps)))
            elif rng.random() < 0.2:
                deps[rng.choice(PKGS)] = "0.1.0"
            elif deps:
                pkg = rng.choice(sorted(deps))
                major, minor, _ = deps[pkg].split(".")
                deps[pkg] = f"{major}.{int(minor) + 1}.0"
            ops.append(
                ("M", f"services/{name}/{MANIFEST[svc['lang']]}", manifest(svc["lang"], deps))
            )
        elif roll < 0.95:
            self.owners[f"/services/{name}/"] = " ".join(
                sorted({f"@team-{rng.randint(1, 12)}" for _ in range(rng.randint(1, 3))})
            )
            ops.append(("M", "CODEOWNERS", self.codeowners()))
        elif roll < 0.97:
            n = len(self.adrs) + 1
            path = f"doc/adr/{n:04d}-decision-{n}.md"
            status = "Accepted"
            live = [k for k, (_, s) in self.adrs.items() if s == "Accepted"]
            if live and rng.random() < 0.3:
                old = rng.choice(live)
                opath, _ = self.adrs[old]
                ops.append(
                    (
                        "M",
                        opath,
                        self.adr_text(
                            old,
                            f"Decision {old}",
                            f"Superseded by [{n}. Decision {n}]({Path(path).name})",
                        ),
                    )
                )
                self.adrs[old] = (opath, "Superseded")
                status = f"Accepted\n\nSupersedes [{old}. Decision {old}]({Path(opath).name})"
            ops.append(("M", path, self.adr_text(n, f"Decision {n}", status)))
            self.adrs[n] = (path, "Accepted")
        elif roll < 0.975 and len(self.services) > 10:  # removal
            for path in svc["files"]:
                ops.append(("D", path, None))
            ops.append(("D", f"services/{name}/{MANIFEST[svc['lang']]}", None))
            del self.services[name]
            self.owners.pop(f"/services/{name}/", None)
            ops.append(("M", "CODEOWNERS", self.codeowners()))
        elif roll < 0.98:  # rewrite in another language
            for path in svc["files"]:
                ops.append(("D", path, None))
            ops.append(("D", f"services/{name}/{MANIFEST[svc['lang']]}", None))
            count = len(svc["files"])
            svc["files"] = []
            svc["lang"] = rng.choice([lang for lang in LANGS if lang != svc["lang"]])
            for _ in range(count):
                self.add_file(ops, name)
            ops.append(
                (
                    "M",
                    f"services/{name}/{MANIFEST[svc['lang']]}",
                    manifest(svc["lang"], svc["deps"]),
                )
            )
        elif roll < 0.99:
            self.new_service(ops)
            ops.append(("M", "CODEOWNERS", self.codeowners()))
        else:
            ops.append(("M", "README.md", f"# shop\n\nrevision {i}\n"))
        return ops


def build(path: Path, commits: int, seed: int = 7) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    b = Builder(seed)
    proc = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin

    def emit_commit(i: int, ops: list) -> None:
        when = START + i * 1800
        msg = f"commit {i}".encode()
        out.write(b"commit refs/heads/main\n")
        out.write(f"mark :{i + 1}\n".encode())
        out.write(f"committer Bench <bench@example.com> {when} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if i > 0:
            out.write(f"from :{i}\n".encode())
        for op, p, content in ops:
            if op == "D":
                out.write(f"D {p}\n".encode())
            else:
                data = content.encode()
                out.write(f"M 100644 inline {p}\n".encode())
                out.write(b"data %d\n%s\n" % (len(data), data))
        out.write(b"\n")

    first: list = []
    for _ in range(30):
        b.new_service(first)
    first.append(("M", "CODEOWNERS", b.codeowners()))
    first.append(
        (
            "M",
            "doc/adr/0001-record-architecture-decisions.md",
            b.adr_text(1, "Record architecture decisions", "Accepted"),
        )
    )
    b.adrs[1] = ("doc/adr/0001-record-architecture-decisions.md", "Accepted")
    emit_commit(0, first)
    for i in range(1, commits):
        emit_commit(i, b.commit_ops(i))
    out.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(path), "symbolic-ref", "HEAD", "refs/heads/main"], check=True)


def time_git_log(path: Path) -> float:
    """``git log --raw`` over the first-parent commits the source reads (merges shown
    against their first parent, as the source reads them)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["git", "-C", str(path), "log", "--first-parent", "--raw", "--no-renames"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    proc.wait()
    return time.perf_counter() - t0


def cpu_seconds() -> float:
    """CPU time (user + system) of this process and of its finished children so far."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def best_of(n: int, fn):
    times, value = [], None
    for _ in range(n):
        t0 = time.perf_counter()
        value = fn()
        times.append(time.perf_counter() - t0)
    return min(times), value


_FIRST_PULL = """
import sys, time
from healthd.sources import build_source
source = build_source("git", "tiny", {"path": sys.argv[1], "revalidate_clock": "head"})
t0 = time.perf_counter()
result = source.pull(None)
assert result.error is None, result.error
print(time.perf_counter() - t0)
"""


def fixed_overhead(tmp: Path, repeat: int) -> float:
    """Best time of a first `git` pull in a fresh process on a one-commit repository."""
    tiny = tmp / "tiny"
    tiny.mkdir(parents=True, exist_ok=True)
    (tiny / "api").mkdir(exist_ok=True)
    (tiny / "api" / "go.mod").write_text("module api\n\nrequire github.com/lib/pq v1.10.9\n")
    (tiny / "api" / "main.go").write_text("package main\n")
    (tiny / "CODEOWNERS").write_text("* @core\n")
    git = ["git", "-C", str(tiny), "-c", "user.name=b", "-c", "user.email=b@example.com"]
    subprocess.run(["git", "init", "-q", str(tiny)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "one", "--allow-empty"], check=True)
    times = []
    for _ in range(repeat):
        out = subprocess.run(
            [sys.executable, "-c", _FIRST_PULL, str(tiny)],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        times.append(float(out.stdout.strip().splitlines()[-1]))
    return min(times)


def cli_start(repeat: int) -> tuple[float, float]:
    """Best start-to-exit time of ``healthd --version`` and, beside it, of a bare Python."""
    healthd = [sys.executable, "-c", "import sys; from healthd.cli import main; sys.exit(main())"]

    def run(cmd: list[str]) -> float:
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)
        return time.perf_counter() - t0

    bare = min(run([sys.executable, "-c", "pass"]) for _ in range(repeat))
    cli = min(run([*healthd, "--version"]) for _ in range(repeat))
    return cli, bare


def benchmark(args: argparse.Namespace) -> int:
    """The whole benchmark (see bench_git.py), with its parsed arguments."""
    tmp = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="healthd-bench-"))
    repo = Path(args.repo) if args.repo else tmp / "bench.git"
    try:
        if not (repo / "HEAD").exists() and not args.repo:
            t0 = time.perf_counter()
            build(repo, args.commits)
            print(
                f"built {args.commits} commits with git fast-import in "
                f"{time.perf_counter() - t0:.1f}s ({repo})"
            )
        opts = {"path": str(repo), "revalidate_clock": "head"}
        git_src = build_source("git", "bench", opts)
        adr_src = build_source("adr", "bench-adr", opts)
        head = subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
        commits = subprocess.run(
            ["git", "-C", str(repo), "rev-list", "--first-parent", "--count", "HEAD"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        print(f"repository                 : {repo} at {head} ({commits} first-parent commits)")
        time_git_log(repo)  # warm the page cache
        t_git, t_log, res = float("inf"), float("inf"), None
        c_git, c_log = float("inf"), float("inf")
        for _ in range(args.repeat):  # alternated, so both see the same load
            c0 = cpu_seconds()
            t_log = min(t_log, time_git_log(repo))
            c1 = cpu_seconds()
            took, res = best_of(1, lambda: git_src.pull(None))
            c_log, c_git = min(c_log, c1 - c0), min(c_git, cpu_seconds() - c1)
            t_git = min(t_git, took)
        assert res is not None and res.error is None, res.error if res else None
        print(f"git log --first-parent --raw --no-renames: {t_log:7.3f}s  (CPU {c_log:.3f}s)")
        print(
            f"git source extraction      : {t_git:7.3f}s  (CPU {c_git:.3f}s; "
            f"{len(res.events)} events, {len(res.skipped)} skipped)"
        )
        t_adr, res_adr = best_of(args.repeat, lambda: adr_src.pull(None))
        if res_adr.error is None:
            print(f"adr source extraction      : {t_adr:7.3f}s  ({len(res_adr.events)} events)")
        else:
            print(f"adr source                 : {res_adr.error[:60]}...")
        ratio = t_git / t_log
        print(
            f"ratio git source / git log : {ratio:7.2f}x  (target <= 3x; CPU time "
            f"{c_git / c_log:.2f}x)"
        )
        t_fixed = fixed_overhead(tmp, max(args.repeat, 3))
        print(
            f"fixed overhead (1 commit)  : {t_fixed:7.3f}s  (first pull, fresh process; target <= 0.3s)"
        )
        t_cli, t_bare = cli_start(max(args.repeat, 5))
        print(
            f"healthd --version start    : {t_cli:7.3f}s  (bare python {t_bare:.3f}s; "
            "target < 0.2s)"
        )
        return 0 if ratio <= 3 and t_fixed <= 0.3 and t_cli < 0.2 else 1
    finally:
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
