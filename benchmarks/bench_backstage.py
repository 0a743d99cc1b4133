"""Benchmark: the `backstage` source over a monorepo's catalog history, and one catalog diff.

Builds (with ``git fast-import``) a repository whose services each keep a
``catalog-info.yaml`` beside their code, with an org chart in ``org/*.yaml`` behind a
Location. Commits edit code (most of them), change owners, lifecycles and dependencies,
move people between teams, add and deprecate services. Then it times

* the `backstage` source's full extraction from the files,
* ``git log --raw --no-renames`` over the same history (output read and discarded),
* one observation of a running catalog's worth of entities (``--entities``) turned into
  facts and diffed with the previous one (the API reader's work after its HTTP pages),

and prints the ratios. No target is asserted: the figures go in the README.

    .venv/bin/python benchmarks/bench_backstage.py [--commits 5000] [--services 300]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from healthd.sources import build_source
from healthd.sources._catalog import catalog_facts, diff_catalog, parse_entity
from healthd.sources.backstage import _held_to_json, _pack

START = 1_600_000_000


def component(name: str, owner: str, lifecycle: str, deps: list[str]) -> str:
    dep = f"  dependsOn: [{', '.join(deps)}]\n" if deps else ""
    return (
        "apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata:\n"
        f"  name: {name}\n  annotations:\n    github.com/project-slug: acme/{name}\n"
        f"spec:\n  type: service\n  lifecycle: {lifecycle}\n  owner: {owner}\n"
        f"  system: shop\n  providesApis: [{name}-api]\n{dep}"
        "---\napiVersion: backstage.io/v1alpha1\nkind: API\nmetadata:\n"
        f"  name: {name}-api\nspec:\n  type: openapi\n  lifecycle: {lifecycle}\n"
        f"  owner: {owner}\n  definition: 'openapi: 3.0.0'\n"
    )


def org(groups: int, members: dict[str, int]) -> str:
    docs = [
        "apiVersion: backstage.io/v1alpha1\nkind: Group\nmetadata: {name: eng}\n"
        "spec: {type: department, children: []}\n"
    ]
    for g in range(groups):
        docs.append(
            "apiVersion: backstage.io/v1alpha1\nkind: Group\n"
            f"metadata: {{name: team-{g}}}\nspec: {{type: team, parent: eng, children: []}}\n"
        )
    for user, g in sorted(members.items()):
        docs.append(
            "apiVersion: backstage.io/v1alpha1\nkind: User\n"
            f"metadata: {{name: {user}}}\nspec: {{memberOf: [team-{g}]}}\n"
        )
    return "---\n".join(docs)


def build(path: Path, commits: int, services: int, seed: int = 11) -> None:
    rng = random.Random(seed)
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    proc = subprocess.Popen(
        ["git", "-C", str(path), "fast-import", "--quiet"], stdin=subprocess.PIPE
    )
    assert proc.stdin is not None
    out = proc.stdin
    groups = max(4, services // 10)
    members = {f"user-{u}": rng.randrange(groups) for u in range(services * 2)}
    live: dict[str, tuple[str, str, list[str]]] = {}

    def write(ops: list[tuple[str, str]], path_: str, text: str) -> None:
        ops.append((path_, text))

    def commit(i: int, ops: list[tuple[str, str | None]]) -> None:
        msg = f"commit {i}".encode()
        out.write(b"commit refs/heads/main\n")
        out.write(f"mark :{i + 1}\n".encode())
        out.write(f"committer Bench <bench@example.com> {START + i * 1800} +0000\n".encode())
        out.write(b"data %d\n%s\n" % (len(msg), msg))
        if i > 0:
            out.write(f"from :{i}\n".encode())
        for p, content in ops:
            if content is None:
                out.write(f"D {p}\n".encode())
            else:
                data = content.encode()
                out.write(f"M 100644 inline {p}\n".encode())
                out.write(b"data %d\n%s\n" % (len(data), data))
        out.write(b"\n")

    def service_ops(name: str) -> list[tuple[str, str | None]]:
        owner, lifecycle, deps = live[name]
        return [(f"services/{name}/catalog-info.yaml", component(name, owner, lifecycle, deps))]

    first: list[tuple[str, str | None]] = [
        (
            "catalog-info.yaml",
            "apiVersion: backstage.io/v1alpha1\nkind: System\nmetadata: {name: shop}\n"
            "spec: {owner: eng}\n---\napiVersion: backstage.io/v1alpha1\nkind: Location\n"
            "metadata: {name: org}\nspec: {targets: [./org/people.yaml]}\n",
        ),
        ("org/people.yaml", org(groups, members)),
    ]
    for s in range(services):
        name = f"svc-{s}"
        live[name] = (f"team-{rng.randrange(groups)}", "production", [])
        first += service_ops(name)
        first.append((f"services/{name}/main.go", f"package main // {s}\n"))
    commit(0, first)
    next_service = services
    for i in range(1, commits):
        roll = rng.random()
        names = sorted(live)
        name = rng.choice(names)
        ops: list[tuple[str, str | None]] = []
        if roll < 0.55:
            ops.append((f"services/{name}/main.go", f"package main // {i}\n"))
        elif roll < 0.75:
            owner, lifecycle, deps = live[name]
            live[name] = (f"team-{rng.randrange(groups)}", lifecycle, deps)
            ops += service_ops(name)
        elif roll < 0.85:
            owner, lifecycle, _ = live[name]
            deps = [f"component:{d}" for d in rng.sample(names, k=min(3, len(names)))]
            live[name] = (owner, lifecycle, deps)
            ops += service_ops(name)
        elif roll < 0.93:
            members[rng.choice(sorted(members))] = rng.randrange(groups)
            ops.append(("org/people.yaml", org(groups, members)))
        elif roll < 0.97:
            name = f"svc-{next_service}"
            next_service += 1
            live[name] = (f"team-{rng.randrange(groups)}", "experimental", [])
            ops += service_ops(name)
        else:
            owner, lifecycle, deps = live[name]
            if lifecycle == "deprecated":
                del live[name]
                ops.append((f"services/{name}/catalog-info.yaml", None))
            else:
                live[name] = (owner, "deprecated", deps)
                ops += service_ops(name)
        commit(i, ops)
    out.close()
    if proc.wait() != 0:
        raise SystemExit("git fast-import failed")
    subprocess.run(["git", "-C", str(path), "symbolic-ref", "HEAD", "refs/heads/main"], check=True)


def time_git_log(path: Path) -> float:
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        ["git", "-C", str(path), "log", "--raw", "--no-renames"], stdout=subprocess.PIPE
    )
    assert proc.stdout is not None
    while proc.stdout.read(1 << 16):
        pass
    proc.wait()
    return time.perf_counter() - t0


def api_observation(entities: int) -> tuple[float, int, int, int]:
    """Seconds to turn a served catalog into facts and diff it with the previous one, the
    changes, and the size of the cursor that keeps it (as JSON, as stored)."""
    rng = random.Random(5)
    raw = []
    for n in range(entities):
        raw.append(
            {
                "apiVersion": "backstage.io/v1alpha1",
                "kind": "Component",
                "metadata": {"name": f"svc-{n}", "namespace": "default", "uid": str(n)},
                "spec": {
                    "type": "service",
                    "lifecycle": "production",
                    "owner": f"team-{rng.randrange(50)}",
                    "dependsOn": [f"component:svc-{rng.randrange(entities)}"],
                },
            }
        )
    before = catalog_facts([parse_entity(r) for r in raw], {})
    _, held, gone = diff_catalog({}, set(), set(), before)
    for r in rng.sample(raw, k=entities // 20):
        r["spec"]["owner"] = "team-new"
    t0 = time.perf_counter()
    now = catalog_facts([parse_entity(r) for r in raw], {})
    changes, held, _ = diff_catalog(held, before.declared, gone, now)
    seconds = time.perf_counter() - t0
    text = json.dumps([_held_to_json(held[k]) for k in sorted(held)], separators=(",", ":"))
    return seconds, len(changes), len(text), len(_pack(text))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=5000)
    parser.add_argument("--services", type=int, default=300)
    parser.add_argument("--entities", type=int, default=10000)
    parser.add_argument("--repeat", type=int, default=3, help="best of N timings")
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="healthd-bench-backstage-"))
    try:
        repo = tmp / "shop.git"
        t0 = time.perf_counter()
        build(repo, args.commits, args.services)
        print(
            f"built {args.commits} commits, {args.services} services in {time.perf_counter() - t0:.1f}s"
        )
        source = build_source("backstage", "bench", {"path": str(repo), "revalidate_clock": "head"})
        time_git_log(repo)
        t_log = min(time_git_log(repo) for _ in range(args.repeat))
        runs = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            result = source.pull(None)
            runs.append(time.perf_counter() - t0)
            assert result.error is None, result.error
        t_src = min(runs)
        print(f"git log --raw --no-renames   : {t_log:7.3f}s")
        print(
            f"backstage source extraction  : {t_src:7.3f}s  ({len(result.events)} events, "
            f"{len(result.skipped)} skipped)"
        )
        print(f"ratio source / git log       : {t_src / t_log:7.2f}x")
        t_api, changed, raw, packed = api_observation(args.entities)
        print(
            f"API observation, {args.entities} entities: {t_api:7.3f}s to read and diff "
            f"({changed} changes); its cursor {raw / 1e6:.1f} MB of JSON, "
            f"{packed / 1e6:.2f} MB stored"
        )
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
