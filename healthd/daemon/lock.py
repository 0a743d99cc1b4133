"""One daemon per state file: an exclusive ``flock`` on the state file itself, so that the
lock follows the file's identity (its device and inode), not the path it was named by: a
symlink, a symlinked directory or a hard link to a running daemon's state file finds it
held. The kernel drops the lock when the process ends, however it ends, so a crash leaves
nothing to take over. ``<state file>.lock`` beside the resolved path says who holds it: the
pid and the ``state_path`` the daemon was started with."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterable

from healthd.daemon.state import StateError, state_path_problem
from healthd.errors import HealthdError


class StateLock:
    def __init__(self, state_path: str) -> None:
        self.state_path = state_path
        self.real = os.path.realpath(state_path)
        self.path = self.real + ".lock"  # who holds the lock, not the lock itself
        self.created = False  # the lock made the (empty) state file
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or HealthdError naming the process that holds it."""
        if self.state_path == ":memory:":
            return  # a state in process memory is no one else's
        problem = state_path_problem(self.state_path)
        if problem:
            raise StateError(f"{self.state_path}: cannot open state file: {problem}")
        try:
            os.makedirs(os.path.dirname(self.real), exist_ok=True)
        except OSError as exc:
            raise StateError(
                f"{self.state_path}: cannot open state file: cannot create its directory "
                f"{os.path.dirname(self.real)}: {exc.strerror}"
            ) from None
        try:
            fd = os.open(self.real, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            fd = self._create()
        except OSError as exc:
            raise StateError(f"{self.state_path}: cannot open state file: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise HealthdError(
                f"state file {self.state_path} is in use by another healthd ({holder}); "
                "give each daemon its own state_path"
            ) from None
        except OSError as exc:  # (a file system without locks: NFS without lockd, ENOLCK)
            os.close(fd)
            raise StateError(
                f"{self.state_path}: cannot lock the state file: {exc.strerror}"
            ) from None
        self._fd = fd
        try:
            with open(self.path, "w", encoding="utf-8") as info:
                info.write(f"{os.getpid()}\n{os.path.abspath(self.state_path)}\n")
        except OSError:
            pass  # who holds it is a courtesy to the next daemon; the lock is taken

    def _create(self) -> int:
        try:
            fd = os.open(self.real, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except FileExistsError:  # another daemon made it meanwhile: lock what it made
            fd = os.open(self.real, os.O_RDWR | os.O_CLOEXEC)
        else:
            self.created = True
        return fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor releases the lock
            self._fd = None


def _holder(fd: int) -> str:
    """Who holds the lock on the file open as ``fd``: the pid from the kernel's table of
    locks, the path from that process's open files and the note it left beside it."""
    st = os.fstat(fd)
    pid = _lock_owner(st.st_dev, st.st_ino)
    if pid is None:
        return "pid unknown"
    for opened in _paths_open(pid, st.st_dev, st.st_ino):
        try:
            with open(opened + ".lock", encoding="utf-8") as info:
                noted, started_with = (info.read().split("\n") + [""])[:2]
        except OSError:
            continue
        if noted == str(pid) and started_with:
            return f"pid {pid}, started with state_path {started_with}"
    return f"pid {pid}"


def _lock_owner(dev: int, ino: int) -> int | None:
    """The pid holding a ``flock`` on (dev, ino), from ``/proc/locks`` (Linux)."""
    wanted = f"{os.major(dev):02x}:{os.minor(dev):02x}:{ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as table:
            for row in table:
                fields = row.split()
                if "FLOCK" in fields and wanted in fields and "->" not in fields:
                    pid = fields[fields.index(wanted) - 1]
                    return int(pid) if pid.isdigit() else None
    except OSError:
        return None
    return None


def _paths_open(pid: int, dev: int, ino: int) -> list[str]:
    """The paths by which process ``pid`` has (dev, ino) open."""
    base = f"/proc/{pid}/fd"
    found: list[str] = []
    try:
        names = os.listdir(base)
    except OSError:
        return found
    for name in names:
        try:
            st = os.stat(f"{base}/{name}")
            if (st.st_dev, st.st_ino) == (dev, ino):
                found.append(os.readlink(f"{base}/{name}"))
        except OSError:
            continue
    return list(dict.fromkeys(found))


class ShadowLocks:
    """One daemon per persistent shadow file too. A shadow is out of :class:`StateLock`'s
    reach: one given its own ``path`` lies elsewhere, and one beside the state file is
    shared by another state file in that directory or named by another daemon's ``path``;
    two daemons writing one shadow reset and replay each other's writes away (or serve
    them). Each is
    held with an exclusive ``flock`` on ``<resolved path>.lock``, which a corrupt shadow
    moved aside leaves in place and which says who holds it: the pid and the
    ``state_path`` the daemon was started with."""

    def __init__(self, state_path: str) -> None:
        self.state_path = state_path
        self._held: dict[str, int] = {}  # lock file: its descriptor

    def hold(self, shadows: Iterable[str]) -> None:
        """Hold the locks of ``shadows`` and of no other shadow, or HealthdError naming one
        another daemon holds (the locks held before are then kept as they were)."""
        wanted = {os.path.realpath(path) + ".lock": path for path in shadows}
        taken: dict[str, int] = {}
        try:
            for lock, path in wanted.items():
                if lock not in self._held:
                    taken[lock] = self._take(lock, path)
        except BaseException:
            for fd in taken.values():
                os.close(fd)
            raise
        for lock in set(self._held) - set(wanted):
            os.close(self._held.pop(lock))
        self._held.update(taken)

    def release(self) -> None:
        self.hold(())

    def _take(self, lock: str, shadow: str) -> int:
        try:
            os.makedirs(os.path.dirname(lock), exist_ok=True)
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise HealthdError(
                f"shadow file {shadow}: cannot lock it ({lock}: {exc.strerror})"
            ) from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            noted = os.pread(fd, 4096, 0).decode("utf-8", "replace").split("\n")
            os.close(fd)
            holder = f"pid {noted[0]}" if noted[0].isdigit() else "pid unknown"
            if noted[0].isdigit() and len(noted) > 1 and noted[1]:
                holder += f", started with state_path {noted[1]}"
            raise HealthdError(
                f"shadow file {shadow} is in use by another healthd ({holder}); "
                "give each daemon its own shadow path"
            ) from None
        except OSError as exc:
            os.close(fd)
            raise HealthdError(
                f"shadow file {shadow}: cannot lock it ({lock}: {exc.strerror})"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n{os.path.abspath(self.state_path)}\n".encode(), 0)
        return fd
