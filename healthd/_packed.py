"""A long, ordered log kept packed: its entries but the newest few as marshal blocks.

Ground truth and the reference memory each keep every operation of every key, for the
whole history, because a late event can land anywhere in a key's past and the key is then
folded again from its first operation. Held as Python objects, an operation costs about
200 bytes (the object, its integers, its timestamp, its slot in a list); packed, a few
dozen. Folding from the start unpacks the blocks again (entries built afresh, the same
values); appending, the usual case, touches only the unpacked tail.
"""

from __future__ import annotations

import bisect
import marshal
import zlib
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

T = TypeVar("T")

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def to_micros(at: datetime) -> int:
    """``at`` (aware) as integer microseconds since the epoch: exact, ordered as instants are,
    and cheaper than a datetime to store, marshal and compare."""
    return (at - _EPOCH) // _MICROSECOND


def from_micros(micros: int) -> datetime:
    """The UTC instant :func:`to_micros` gave ``micros`` for."""
    return _EPOCH + micros * _MICROSECOND


#: Entries per packed block; the tail holds between 1 and BLOCK entries.
BLOCK = 8
#: Blocks are deflated (raw, zlib's fastest level, a 512-byte window and the smallest
#: state that still compresses as well: zlib's default state costs 30 us a block to set up,
#: this one 8): 1.8x smaller on the project histories of benchmarks/, whose blocks repeat
#: times, sequence numbers and the key's values. Only a fold from the start reads them back.
_WBITS = -9


def _deflate(data: bytes) -> bytes:
    deflater = zlib.compressobj(1, zlib.DEFLATED, _WBITS, 2)
    return deflater.compress(data) + deflater.flush()


class Codec(Protocol[T]):
    """How an entry is written as plain values marshal takes, and read back."""

    def pack(self, entry: T) -> Any: ...

    def unpack(self, row: Any) -> T: ...


class TupleTable:
    """Each distinct tuple (a dependency list, an expiry) stored once; a packed entry keeps
    its index."""

    __slots__ = ("_index", "_lists")

    def __init__(self) -> None:
        self._lists: list[tuple[Any, ...]] = []
        self._index: dict[tuple[Any, ...], int] = {}

    def index(self, deps: tuple[Any, ...]) -> int:
        found = self._index.get(deps)
        if found is None:
            found = self._index[deps] = len(self._lists)
            self._lists.append(deps)
        return found

    def __getitem__(self, index: int) -> tuple[Any, ...]:
        return self._lists[index]


class PackedLog(Generic[T]):
    """Entries in the order of ``key`` (appended in that order or inserted with
    :meth:`insort`); iterating yields every entry, the packed ones unpacked afresh."""

    __slots__ = ("_blocks", "_codec", "_key", "_tail")

    def __init__(self, codec: Codec[T], key: Callable[[T], Any]) -> None:
        self._codec = codec
        self._key = key
        self._blocks: list[bytes] = []
        self._tail: list[T] = []

    def __len__(self) -> int:
        return len(self._blocks) * BLOCK + len(self._tail)

    def __bool__(self) -> bool:
        return bool(self._tail)  # the tail is never empty when there are packed blocks

    def __iter__(self) -> Iterator[T]:
        unpack, decompress = self._codec.unpack, zlib.decompress
        for block in self._blocks:
            for row in marshal.loads(decompress(block, _WBITS)):
                yield unpack(row)
        yield from self._tail

    def last(self) -> T | None:
        return self._tail[-1] if self._tail else None

    def append(self, entry: T) -> None:
        """Add an entry that sorts at or after every other one."""
        tail = self._tail
        tail.append(entry)
        if len(tail) > BLOCK:  # the newest stays out, for last() and the next comparison
            pack = self._codec.pack
            block = marshal.dumps([pack(e) for e in tail[:BLOCK]])
            self._blocks.append(_deflate(block))
            del tail[:BLOCK]

    def insort(self, entry: T) -> None:
        """Add an entry where its key sorts it (after entries with an equal key)."""
        key, tail = self._key, self._tail
        if not self._blocks or (tail and key(entry) >= key(tail[0])):
            bisect.insort(tail, entry, key=key)
            return
        entries = list(self)
        bisect.insort(entries, entry, key=key)
        self.replace(entries)

    def replace(self, entries: Iterable[T]) -> None:
        """Hold ``entries`` (in order) instead."""
        self._blocks = []
        self._tail = []
        for entry in entries:
            self.append(entry)
