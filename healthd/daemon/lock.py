"""One daemon per state file: an exclusive ``flock`` on ``<state_path>.lock``, which holds
the owner's pid. The kernel drops the lock when the process ends, however it ends, so a
stale lock file left by a crash is taken over at once."""

from __future__ import annotations

import fcntl
import os

from healthd.errors import HealthdError


class StateLock:
    def __init__(self, state_path: str) -> None:
        self.path = os.path.abspath(state_path) + ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or HealthdError naming the process that holds it."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise HealthdError(f"cannot open the lock file {self.path}: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            raise HealthdError(
                f"state file {self.path[: -len('.lock')]} is in use by another healthd "
                f"(pid {holder}, lock {self.path}); give each daemon its own state_path"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None
