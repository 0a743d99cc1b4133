"""The daemon's locks on its state file and persistent shadows: held by one daemon at once,
and a lock the file system cannot take said as that, not as another daemon's."""

from __future__ import annotations

import errno
import os

import pytest

from healthd.daemon import lock
from healthd.daemon.lock import ShadowLocks, StateLock
from healthd.daemon.state import StateError
from healthd.errors import HealthdError


def test_a_state_file_held_by_another_daemon_is_in_use_with_its_pid(tmp_path):
    first = StateLock(str(tmp_path / "state.db"))
    first.acquire()
    try:
        with pytest.raises(HealthdError, match=rf"in use by another healthd \(pid {os.getpid()}"):
            StateLock(str(tmp_path / "state.db")).acquire()
    finally:
        first.release()


def test_a_shadow_held_by_another_daemon_is_in_use_with_its_pid(tmp_path):
    first = ShadowLocks(str(tmp_path / "a.db"))
    first.hold([str(tmp_path / "shadow.db")])
    try:
        with pytest.raises(HealthdError, match=rf"in use by another healthd \(pid {os.getpid()}"):
            ShadowLocks(str(tmp_path / "b.db")).hold([str(tmp_path / "shadow.db")])
    finally:
        first.release()


def _no_locks(fd: int, operation: int) -> None:
    # (what flock gives on a file system without locks, such as NFS without lockd; no such
    # file system can be mounted here)
    raise OSError(errno.ENOLCK, os.strerror(errno.ENOLCK))


def test_a_state_file_that_cannot_be_locked_is_said_so_not_blamed_on_another_daemon(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(lock.fcntl, "flock", _no_locks)
    with pytest.raises(StateError) as caught:
        StateLock(str(tmp_path / "state.db")).acquire()
    assert str(caught.value) == (
        f"{tmp_path / 'state.db'}: cannot lock the state file: {os.strerror(errno.ENOLCK)}"
    )


def test_a_shadow_that_cannot_be_locked_is_said_so_not_blamed_on_another_daemon(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(lock.fcntl, "flock", _no_locks)
    shadow = tmp_path / "shadow.db"
    with pytest.raises(HealthdError) as caught:
        ShadowLocks(str(tmp_path / "state.db")).hold([str(shadow)])
    assert str(caught.value) == (
        f"shadow file {shadow}: cannot lock it ({shadow}.lock: {os.strerror(errno.ENOLCK)})"
    )
