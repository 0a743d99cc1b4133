"""Embedder benchmark: the Mem0 and Graphiti shadows' two embedders side by side in one run.

Prints the model's load time, then per embedder the cost per text embedded one at a time
(as a probe question is) and in one batch (as a replay's writes could be), on the shapes
healthd stores (a probe question and its answer, some of them paragraph-long requirements),
and the ratio of the model's cost to the hashing embedder's. Every text is new to the
model's cache. Not a test: figures depend on the machine; compare the columns.

    .venv/bin/python benchmarks/bench_embedders.py            # 256 texts
    .venv/bin/python benchmarks/bench_embedders.py --texts 64
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from healthd.embedding import HashingEmbedder, MiniLMEmbedder, minilm

REQUIREMENT = (
    "every request carries an Idempotency-Key header; the gateway keeps the key with its "
    "response for 24 hours and replays it for a repeated key, so a retry never charges twice"
)


def texts(n: int, offset: int) -> list[str]:
    out = []
    for i in range(offset, offset + n):
        if i % 4 == 0:
            out.append(f"What does service-{i} require? {REQUIREMENT} (rule {i})")
        else:
            out.append(f"Who owns service-{i}? @owner-{i}")
    return out


def per_text(embed, batch: list[str], one_by_one: bool) -> float:
    started = time.perf_counter()
    if one_by_one:
        for text in batch:
            embed([text])
    else:
        embed(batch)
    return (time.perf_counter() - started) / len(batch)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    args = parser.parse_args()
    started = time.perf_counter()
    minilm.load()
    print(f"all-MiniLM-L6-v2 loaded in {time.perf_counter() - started:.2f} s\n")
    rows = {}
    for name, embedder in (("minilm", MiniLMEmbedder()), ("hashing", HashingEmbedder())):
        single = per_text(embedder.embed, texts(args.texts, 0), one_by_one=True)
        batched = per_text(embedder.embed, texts(args.texts, args.texts), one_by_one=False)
        rows[name] = (single, batched)
    header = f"{'embedder':<10}{'ms/text, one by one':>22}{'ms/text, one batch':>22}"
    print(f"{args.texts} texts each way, a quarter of them paragraph-long\n")
    print(header)
    print("-" * len(header))
    for name, (single, batched) in rows.items():
        print(f"{name:<10}{single * 1000:>22.3f}{batched * 1000:>22.3f}")
    ratio = rows["minilm"][0] / rows["hashing"][0]
    print(f"\nminilm / hashing, one by one: {ratio:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
