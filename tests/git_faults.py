"""A real ``git`` that fails as git does in the field: one command's processes send part of
their output and then die by SIGKILL (the OOM killer, a corrupt pack) or hang with their pipe
open for a minute (a lazy fetch from a remote that does not answer). Put the returned directory first on
``PATH``; every other git command runs as it is."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def cutting_git(
    tmp_path: Path, command: str, *, limit: int, times: int, then: str, match: str = ""
) -> tuple[Path, Path]:
    """A directory holding a ``git`` whose first ``times`` ``command`` processes (``log``,
    ``cat-file``; with ``match``, only those given that argument too) send ``limit`` bytes
    and then die (``then="die"``) or hang (``"stall"``), and the file that counts those
    processes, a line each."""
    assert then in ("die", "stall")
    real = shutil.which("git")
    assert real is not None
    bin_dir = tmp_path / f"git-cut-{command}"
    bin_dir.mkdir()
    runs = tmp_path / f"git-cut-{command}-runs"
    runs.write_text("")
    cutter = bin_dir / "cut"
    cutter.write_text(
        f"#!{sys.executable}\n"
        "import os, signal, subprocess, sys, time\n"
        f"with open({str(runs)!r}, 'a+') as f:\n"
        "    f.write('x\\n'); f.seek(0); run = len(f.read().split())\n"
        f"if run > {times}:\n"
        f"    os.execv({real!r}, [{real!r}, *sys.argv[1:]])\n"
        f"git = subprocess.Popen([{real!r}, *sys.argv[1:]], stdout=subprocess.PIPE)\n"
        f"left = {limit}\n"
        "while left > 0:\n"
        "    piece = os.read(git.stdout.fileno(), left)\n"
        "    if not piece: break\n"
        "    os.write(1, piece); left -= len(piece)\n"
        f"if {then!r} == 'stall':\n"
        "    time.sleep(60)\n"  # (far past any run_timeout a test sets, and ends)
        "git.kill(); git.wait()\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    cutter.chmod(0o755)
    wrapper = bin_dir / "git"
    cut = f'exec "{cutter}" "$@"'
    if match:  # (a second test: the argument may come right after the command)
        cut = f'case " $* " in *" {match} "*) {cut};; esac'
    wrapper.write_text(
        f'#!/bin/sh\ncase " $* " in *" {command} "*) {cut};; esac\nexec "{real}" "$@"\n'
    )
    wrapper.chmod(0o755)
    return bin_dir, runs
