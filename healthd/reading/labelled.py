"""`healthd reader-check`: a reader scored against a labelled set of served items.

A labelled set is JSONL, one served item a line::

    {"id": "mem0-014", "source": "mem0", "subject": "billing", "predicate": "owners",
     "values": ["@alice", "@bob"], "text": "Handed billing over to Bob last week",
     "asserts": ["@bob"], "negates": []}

``values`` are every value the key has held (what the reader is given), ``asserts`` and
``negates`` what a careful person reads in ``text``. Optional: ``other``, values the text
asserts for the key that are not among ``values`` (an invented value: "gateway is
implemented in Elixir" for a key that held go and node), as the text spells them;
``style``, where the item's phrasing comes from (a document or page showing that style);
``kind``, the failure kind the item exercises. None of asserts, negates and other means the
item says nothing about the key (``unread``). Precision and recall are per class: asserts,
negates and other over (item, value) pairs (an ``other`` value read matches a labelled one
when either names the other), unread over items.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources

from healthd import _json
from healthd._files import open_text
from healthd.errors import ReaderError
from healthd.model import FactKey
from healthd.reading import Reader, Reading
from healthd.reading._match import value_pattern

CLASSES = ("asserts", "negates", "other", "unread")
_FIELDS = {"id", "source", "subject", "predicate", "values", "text", "asserts", "negates"}
_OPTIONAL = {"other", "style", "kind"}
BUNDLED = "reader_labelled.jsonl"


@dataclass(frozen=True, slots=True)
class LabelledItem:
    id: str
    source: str
    key: FactKey
    values: tuple[str, ...]
    text: str
    asserts: frozenset[str]
    negates: frozenset[str]
    other: tuple[str, ...] = ()
    style: str = ""
    kind: str = ""


@dataclass
class ClassCounts:
    labelled: int = 0
    predicted: int = 0
    correct: int = 0

    @property
    def precision(self) -> float | None:
        return self.correct / self.predicted if self.predicted else None

    @property
    def recall(self) -> float | None:
        return self.correct / self.labelled if self.labelled else None


@dataclass
class CheckResult:
    reader: str
    items: int
    sources: dict[str, int]
    classes: dict[str, ClassCounts] = field(default_factory=dict)
    errors: list[tuple[LabelledItem, Reading]] = field(default_factory=list)
    readings: list[tuple[LabelledItem, Reading]] = field(default_factory=list)
    kinds: dict[str, list[int]] = field(default_factory=dict)  # kind: [items, read wrongly]

    def as_dict(self, *, show_all: bool = False) -> dict[str, object]:
        out: dict[str, object] = {
            "reader": self.reader,
            "items": self.items,
            "sources": self.sources,
            "classes": {
                name: {
                    "labelled": c.labelled,
                    "predicted": c.predicted,
                    "correct": c.correct,
                    "precision": c.precision,
                    "recall": c.recall,
                }
                for name, c in self.classes.items()
            },
            "errors": [
                {
                    "id": item.id,
                    "text": item.text,
                    "expected": {
                        "asserts": sorted(item.asserts),
                        "negates": sorted(item.negates),
                        "other": list(item.other),
                    },
                    "read": _read(got),
                }
                for item, got in self.errors
            ],
        }
        if self.kinds:
            out["kinds"] = {
                kind: {"items": counts[0], "wrong": counts[1]}
                for kind, counts in sorted(self.kinds.items())
            }
        if show_all:
            out["readings"] = [{"id": item.id, "read": _read(got)} for item, got in self.readings]
        return out


def _read(got: Reading) -> dict[str, list[str]]:
    return {"asserts": list(got.asserted), "negates": list(got.negated), "other": list(got.other)}


def _strings(value: object, where: str, name: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ReaderError(f"{where}, field '{name}': expected a list of non-empty strings")
    return value


def parse_labelled(lines: Sequence[str], origin: str) -> list[LabelledItem]:
    items: list[LabelledItem] = []
    seen: set[str] = set()
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{origin}, line {number}"
        try:
            obj = _json.loads(raw)
        except _json.BadJSON as exc:
            raise ReaderError(f"{where}: invalid JSON: {exc.reason}") from None
        if not isinstance(obj, dict):
            raise ReaderError(f"{where}: expected a JSON object")
        missing = _FIELDS - set(obj)
        if missing:
            raise ReaderError(f"{where}: missing field(s) {sorted(missing)}")
        unknown = set(obj) - _FIELDS - _OPTIONAL
        if unknown:
            raise ReaderError(f"{where}: unknown field(s) {sorted(unknown)}")
        for name in ("id", "source", "subject", "predicate", "text"):
            if not isinstance(obj[name], str) or not obj[name].strip():
                raise ReaderError(f"{where}, field '{name}': expected a non-empty string")
        if obj["id"] in seen:
            raise ReaderError(f"{where}, field 'id': {obj['id']!r} is used twice")
        seen.add(obj["id"])
        values = _strings(obj["values"], where, "values")
        asserts = _strings(obj["asserts"], where, "asserts")
        negates = _strings(obj["negates"], where, "negates")
        for name, listed in (("asserts", asserts), ("negates", negates)):
            stray = sorted(set(listed) - set(values))
            if stray:
                raise ReaderError(f"{where}, field '{name}': {stray} not among 'values'")
        both = sorted(set(asserts) & set(negates))
        if both:
            raise ReaderError(f"{where}: {both} both asserted and negated")
        other = _strings(obj.get("other", []), where, "other")
        known = sorted(o for o in other if o in values)
        if known:
            raise ReaderError(f"{where}, field 'other': {known} among 'values'")
        for name in ("style", "kind"):
            if name in obj and (not isinstance(obj[name], str) or not obj[name].strip()):
                raise ReaderError(f"{where}, field '{name}': expected a non-empty string")
        items.append(
            LabelledItem(
                obj["id"],
                obj["source"],
                FactKey(obj["subject"], obj["predicate"]),
                tuple(values),
                obj["text"],
                frozenset(asserts),
                frozenset(negates),
                tuple(other),
                obj.get("style", ""),
                obj.get("kind", ""),
            )
        )
    if not items:
        raise ReaderError(f"{origin}: no labelled item")
    return items


def load_labelled(path: str | None = None) -> list[LabelledItem]:
    """The labelled set at ``path``, else the one shipped with healthd."""
    if path is None:
        text = (resources.files("healthd") / "data" / BUNDLED).read_text(encoding="utf-8")
        return parse_labelled(text.splitlines(), BUNDLED)
    try:
        with open_text(path) as handle:
            lines = handle.readlines()
    except OSError as exc:
        raise ReaderError(f"{path}: cannot read labelled set: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ReaderError(f"{path}: labelled set is not UTF-8 text") from None
    return parse_labelled(lines, path)


def check_reader(reader: Reader, items: Sequence[LabelledItem]) -> CheckResult:
    sources: dict[str, int] = {}
    result = CheckResult(reader.label, len(items), sources, {c: ClassCounts() for c in CLASSES})
    asserts, negates, other, unread = (result.classes[c] for c in CLASSES)
    for item in items:
        sources[item.source] = sources.get(item.source, 0) + 1
        got = reader.read(item.text, item.key, item.values)
        result.readings.append((item, got))
        got_a, got_n = set(got.asserted), set(got.negated)
        asserts.labelled += len(item.asserts)
        asserts.predicted += len(got_a)
        asserts.correct += len(got_a & item.asserts)
        negates.labelled += len(item.negates)
        negates.predicted += len(got_n)
        negates.correct += len(got_n & item.negates)
        found = _matched(item.other, got.other)
        other.labelled += len(item.other)
        other.predicted += len(got.other)
        other.correct += found
        expected_unread = not item.asserts and not item.negates and not item.other
        unread.labelled += expected_unread
        unread.predicted += got.unread
        unread.correct += expected_unread and got.unread
        wrong = (
            got_a != item.asserts
            or got_n != item.negates
            or not found == len(item.other) == len(got.other)
        )
        if wrong:
            result.errors.append((item, got))
        if item.kind:
            counts = result.kinds.setdefault(item.kind, [0, 0])
            counts[0] += 1
            counts[1] += wrong
    return result


def _names(one: str, another: str) -> bool:
    """One spelling of a value names the other: "Elixir" and "elixir 1.16", "v4" and "4"."""
    return bool(value_pattern(one).search(another) or value_pattern(another).search(one))


def _matched(labelled: Sequence[str], read: Sequence[str]) -> int:
    """How many labelled ``other`` values a read one names, each read value used once."""
    left = list(read)
    count = 0
    for value in labelled:
        for i, got in enumerate(left):
            if _names(value, got):
                del left[i]
                count += 1
                break
    return count


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_check(result: CheckResult, *, show_errors: bool = False, show_all: bool = False) -> str:
    sources = ", ".join(f"{name} {count}" for name, count in sorted(result.sources.items()))
    lines = [
        f"reader {result.reader} on {result.items} labelled items ({sources})",
        f"{'class':<9} {'labelled':>8} {'read':>6} {'correct':>7} {'precision':>9} {'recall':>7}",
    ]
    for name, c in result.classes.items():
        lines.append(
            f"{name:<9} {c.labelled:>8} {c.predicted:>6} {c.correct:>7} "
            f"{_cell(c.precision):>9} {_cell(c.recall):>7}"
        )
    lines.append(f"{len(result.errors)} item(s) read differently from their labels")
    if result.kinds:
        lines.append(
            "by kind: "
            + ", ".join(f"{k} {n - w}/{n}" for k, (n, w) in sorted(result.kinds.items()))
        )
    if show_errors or show_all:
        wrong = {id(item) for item, _ in result.errors}
        for item, got in result.readings if show_all else result.errors:
            mark = "  " if not show_all else ("x " if id(item) in wrong else "  ")
            lines.append(
                f"{mark}{item.id}: {item.text!r}: expected asserts {sorted(item.asserts)} "
                f"negates {sorted(item.negates)} other {list(item.other)}, read asserts "
                f"{list(got.asserted)} negates {list(got.negated)} other {list(got.other)}"
            )
    return "\n".join(lines) + "\n"
