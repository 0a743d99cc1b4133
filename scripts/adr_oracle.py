"""Check an `adr` timeline against an independent reading of the repository, commit by commit.

At every first-parent commit it lists the decision records of the given directories with
``git ls-tree`` and reads each with ``git show``, by rules of its own (no healthd code is
imported): the number from the file name (``0017-x.md``, ``ADR015-x.md``, ``DR005-x.MD``),
the title from the first ``# `` heading without its number (and without ``*`` and
backticks, on both sides), the status from the first line under a ``Status`` heading or a
``Status:`` line, a decision when it starts, past quotes, marks and emoji, with Accepted or
Approved. It replays the timeline's events (``healthd timeline --source NAME``) up to the
same commit and compares, for every number exactly one file holds, the decision the log
says ADR N is with the one the timeline holds for ``<space>:N``; a number two files share
is left out, as is which record superseded which.

    healthd timeline --config adr.toml --source adr > adr.jsonl
    python scripts/adr_oracle.py CHECKOUT adr.jsonl docs/architecture/decisions [--space dr]

Prints the first differences and ``commits checked N, differing M``; exits 1 when M > 0.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict

RECORD = re.compile(r"/(?:[A-Z]+)?(\d{3,4})-[^/]*\.md$", re.IGNORECASE)
TITLE_NUMBER = re.compile(r"^(?:[A-Z]+-?)?\d+[.:]?\s*")
STATUS_HEADING = re.compile(r"^#+ Status:?\s*\n+(.+)$", re.MULTILINE | re.IGNORECASE)
STATUS_LINE = re.compile(r"^\W*Status:\W*(.+)$", re.MULTILINE | re.IGNORECASE)
LEADING_MARKS = re.compile(r"^[\W_]+")  # quotes, emphasis, an emoji: "> **✅ Accepted**"
MARKUP = str.maketrans("", "", "`*")


def plain(title: str) -> str:
    """A title without inline code or emphasis marks (what it says, not how it looks)."""
    return title.translate(MARKUP)


def git(repo: str, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", repo, *args], capture_output=True, text=True, errors="replace", check=True
    ).stdout


def decisions_in_log(repo: str, sha: str, dirs: list[str]) -> tuple[dict[int, str], Counter]:
    """ADR number → title of the accepted records at ``sha`` whose number no other file
    has; and how many files hold each number."""
    listing = git(repo, "ls-tree", "-r", "--name-only", sha, "--", *dirs).splitlines()
    files = [
        (int(m.group(1)), path)
        for path in listing
        if (m := RECORD.search(path)) and "templat" not in path.lower()
    ]
    holders = Counter(number for number, _ in files)
    out: dict[int, str] = {}
    for number, path in files:
        if holders[number] > 1:
            continue
        text = git(repo, "show", f"{sha}:{path}")
        heading = next(
            (line[2:].strip() for line in text.splitlines() if line.startswith("# ")), ""
        )
        found = STATUS_HEADING.search(text) or STATUS_LINE.search(text)
        status = LEADING_MARKS.sub("", found.group(1)).lower() if found else ""
        if status.startswith(("accepted", "approved")) and " or " not in status:
            out[number] = plain(TITLE_NUMBER.sub("", heading).strip(" :-"))
    return out, holders


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkout")
    parser.add_argument("timeline")
    parser.add_argument("dirs", help="the log's directories, comma-separated (earlier names too)")
    parser.add_argument("--space", default="adr", help="the timeline's subject space (adr, dr)")
    parser.add_argument("--show", type=int, default=8, help="differences printed")
    args = parser.parse_args()
    dirs = args.dirs.split(",")
    events_of: dict[str, list[dict]] = defaultdict(list)
    with open(args.timeline, encoding="utf-8") as lines:
        for line in lines:
            event = json.loads(line)
            events_of[event["metadata"].get("commit", "")].append(event)
    held: dict[str, str] = {}
    checked = differing = 0
    for line in git(args.checkout, "log", "--first-parent", "--reverse", "--format=%H").split():
        for event in events_of.get(line, ()):
            fact, previous = event["fact"], event.get("previous")
            if event["type"] == "revised" and previous:
                held.pop(previous["subject"], None)
            if event["type"] == "invalidated":
                held.pop(fact["subject"], None)
            else:
                held[fact["subject"]] = fact["value"]
        truth, holders = decisions_in_log(args.checkout, line, dirs)
        if not holders:
            continue
        ours = {}
        for name, title in held.items():
            space, _, rest = name.partition(":")
            if space == args.space and rest.isdigit() and holders.get(int(rest), 0) <= 1:
                ours[int(rest)] = plain(title)
        checked += 1
        if ours != truth:
            differing += 1
            if differing <= args.show:
                diff = {n: (truth.get(n), ours.get(n)) for n in truth.keys() | ours.keys()}
                print(
                    line[:8],
                    "the log vs the timeline:",
                    {n: d for n, d in diff.items() if d[0] != d[1]},
                )
    print(f"commits checked {checked}, differing {differing}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
