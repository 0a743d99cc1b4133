"""Probes: natural-language questions about keys, generated from a timeline or given in a file.

Pure: no I/O here except :func:`load_probe_file`, which only reads and validates.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import InitVar, dataclass, field
from json.encoder import encode_basestring, encode_basestring_ascii

from healthd import _json
from healthd._files import open_text, undecodable_line
from healthd.errors import ProbeFileError
from healthd.model import DOMAINS, ChangeEvent, Domain, Fact, FactKey, Probe

_OWNERSHIP_PREDICATES = {
    "owner",
    "owners",
    "maintainer",
    "maintainers",
    "assignee",
    "assignees",
    "codeowners",
    "team",
    "owned_by",
}


def _words(text: str) -> str:
    return re.sub(r"[_\-:./]+", " ", text).strip()


def question_for(subject: str, predicate: str, domain: Domain) -> str:
    """A question a person would ask about the key, by predicate, else by domain."""
    pred = predicate.lower()
    if pred in _OWNERSHIP_PREDICATES:
        return f"Who owns {subject}?"
    if pred in {"on_call", "on-call"}:
        return f"Who is on call for {subject}?"
    if pred == "language":
        return f"What programming language is {subject} written in?"
    if pred == "exists":
        return f"Does {subject} still exist?"
    if pred.startswith("dependency:"):
        name = predicate.split(":", 1)[1]
        return f"Which version of {name} does {subject} depend on?"
    if pred == "decision":
        if subject.lower().startswith("adr:"):
            return f"What did ADR {subject.split(':', 1)[1]} decide?"
        return f"What is the current decision on {subject}?"
    if pred == "requirement":
        return f"What does {subject} require?"
    if pred == "status":
        return f"What is the status of {subject}?"
    if pred in ("source_of_truth", "source-of-truth"):
        return f"What is the source of truth for {subject}?"
    words = _words(predicate)
    if domain == "ownership":
        return f"Who is the {words} for {subject}?"
    if domain == "decision":
        return f"What was decided about {words} for {subject}?"
    if domain == "requirement":
        return f"What is required for {words} of {subject}?"
    return f"What is the {words} of {subject}?"


def _digest(*parts: str) -> str:
    """A digest of the parts as a JSON list: no two different lists share an encoding,
    whatever characters the parts hold (a separator character could be one of them)."""
    # json.dumps(parts, ensure_ascii=False, separators=(",", ":")), byte for byte, without
    # building an encoder per call (a restart digests every key's id)
    encoded = "[" + ",".join(map(encode_basestring, parts)) + "]"
    return hashlib.sha256(encoded.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def generated_probe_id(key: FactKey) -> str:
    return f"p-{_digest(key.subject, key.predicate)}"


def _canonical(probe: Probe) -> str:
    """What of a probe its set's version covers, as JSON (as json.dumps writes it)."""
    texts = (probe.id, probe.question, probe.subject, probe.predicate, probe.domain)
    multi = "true" if probe.multi_valued else "false"  # a bool wherever a probe is made
    return f"[{', '.join(map(encode_basestring_ascii, texts))}, {multi}]"


@dataclass(frozen=True)
class ProbeSet:
    probes: tuple[Probe, ...]
    by_key: dict[FactKey, tuple[Probe, ...]] = field(init=False, repr=False, compare=False)
    version: str = field(init=False, compare=False)
    # each probe's _canonical text by id, when the caller keeps them (a long-lived catalog
    # that extends its set run after run): the rest are written here
    canonical: InitVar[Mapping[str, str] | None] = field(default=None, kw_only=True)

    def __post_init__(self, canonical: Mapping[str, str] | None) -> None:
        by_key: dict[FactKey, list[Probe]] = {}
        first: dict[str, Probe] = {}
        for probe in self.probes:
            other = first.setdefault(probe.id, probe)
            if other is not probe:
                raise ProbeFileError(
                    f"probe id {probe.id!r} is used twice: by {other.subject!r} /"
                    f" {other.predicate!r} ({other.origin}) and by {probe.subject!r} /"
                    f" {probe.predicate!r} ({probe.origin})"
                )
            by_key.setdefault(probe.key, []).append(probe)
        object.__setattr__(self, "by_key", {k: tuple(v) for k, v in by_key.items()})
        # The JSON list of every probe's _canonical list in order of id (ids are unique
        # here): written from each probe's own text, so a set extended by a few probes
        # dumps only theirs.
        known = canonical or {}
        texts = [known.get(i) or _canonical(first[i]) for i in sorted(first)]
        listed = "[" + ", ".join(texts) + "]"
        object.__setattr__(self, "version", hashlib.sha256(listed.encode()).hexdigest()[:16])

    @functools.cached_property
    def file_version(self) -> str:
        """The digest of the probes written in a file alone (the generated ones follow the
        project's keys): a changed probe file changes it, a new fact does not."""
        texts = sorted(_canonical(p) for p in self.probes if p.origin == "file")
        return hashlib.sha256(("[" + ", ".join(texts) + "]").encode()).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.probes)

    def __iter__(self) -> Iterator[Probe]:
        return iter(self.probes)

    def for_key(self, key: FactKey) -> tuple[Probe, ...]:
        return self.by_key.get(key, ())


class KeyCatalog:
    """Every key a timeline has held, in the order first seen, with what its generated probe
    is made of (the domain it was first seen with, whether any event declared it
    multi-valued). Extended event by event, so a long-running caller updates its probe set
    from new events alone: ``KeyCatalog(events).probe_set(extra)`` is
    :func:`build_probe_set` (``events``, ``extra``) however the events were split."""

    def __init__(self, events: Iterable[ChangeEvent] = ()) -> None:
        self.keys: dict[FactKey, tuple[Domain, bool]] = {}
        self._probes: dict[FactKey, Probe] = {}
        self._canonical: dict[str, str] = {}  # of each probe in _probes, by id
        self.add(events)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, Domain, bool]]) -> KeyCatalog:
        """A catalog from its :meth:`rows`, as stored."""
        catalog = cls()
        catalog.keys = {FactKey(s, p): (domain, bool(multi)) for s, p, domain, multi in rows}
        return catalog

    def rows(self, keys: Iterable[FactKey]) -> list[tuple[str, str, Domain, bool]]:
        return [(k.subject, k.predicate, *self.keys[k]) for k in keys]

    def add(self, events: Iterable[ChangeEvent]) -> list[FactKey]:
        """Take events in; the keys that are new or whose probe changed, in first-seen order."""
        changed: dict[FactKey, None] = {}
        for event in events:
            previous = event.previous
            if previous is not None:
                self._take(previous, False, changed)
            self._take(event.fact, event.multi_valued, changed)
        return list(changed)

    def _take(self, fact: Fact, multi_valued: bool, changed: dict[FactKey, None]) -> None:
        """Take in a fact an event holds (``multi_valued``: the event declares its key so)."""
        key = fact.key
        known = self.keys.get(key)
        if known is not None and (known[1] or not multi_valued):
            return  # (the usual case: a key seen before, its probe as it was)
        domain = fact.domain if known is None else known[0]
        self.keys[key] = (domain, multi_valued)
        changed[key] = None

    def probe_set(self, extra: Sequence[Probe] = ()) -> ProbeSet:
        """One generated probe for every key, then the given probes."""
        keys = self.keys
        cache = self._probes
        probes = []
        for key, (domain, multi) in keys.items():
            probe = cache.get(key)
            if probe is None or probe.domain != domain or probe.multi_valued != multi:
                probe = cache[key] = Probe(
                    generated_probe_id(key),
                    question_for(key.subject, key.predicate, domain),
                    key.subject,
                    key.predicate,
                    domain,
                    multi,
                )
                self._canonical[probe.id] = _canonical(probe)
            probes.append(probe)
        for probe in extra:
            # The file's domain is the author's: it files the probe's contamination and
            # conflicts (coverage follows each expected fact's own domain).
            _, multi = keys.get(probe.key, (probe.domain, probe.multi_valued))
            probes.append(
                Probe(
                    probe.id,
                    probe.question,
                    probe.subject,
                    probe.predicate,
                    probe.domain,
                    multi,
                    "file",
                )
            )
        return ProbeSet(tuple(probes), canonical=self._canonical)


def build_probe_set(events: Iterable[ChangeEvent], extra: Sequence[Probe] = ()) -> ProbeSet:
    """One generated probe for every key the timeline has held, then the given probes."""
    return KeyCatalog(events).probe_set(extra)


def load_probe_file(path: str) -> list[Probe]:
    """Probes written by hand: JSONL, one object per line with ``question``, ``subject``,
    ``predicate``, ``domain`` and optionally ``id``."""
    try:
        with open_text(path) as handle:
            lines = handle.readlines()
    except OSError as exc:
        raise ProbeFileError(f"{path}: cannot read probe file: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        number, reason = undecodable_line(path) or (0, exc.reason)
        where = f"{path}, line {number}" if number else path
        raise ProbeFileError(f"{where}: not UTF-8 text: {reason}") from None
    probes: list[Probe] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        where = f"{path}, line {number}"
        try:
            obj = _json.loads(raw, unique_names=True)
        except _json.BadJSON as exc:
            raise ProbeFileError(f"{where}: invalid JSON: {exc}") from None
        if not isinstance(obj, dict):
            raise ProbeFileError(f"{where}: expected a JSON object")
        unknown = set(obj) - {"id", "question", "subject", "predicate", "domain"}
        if unknown:
            raise ProbeFileError(f"{where}: unknown field(s) {sorted(unknown)}")
        values = {}
        for name in ("question", "subject", "predicate", "domain"):
            value = obj.get(name)
            if not isinstance(value, str) or not value.strip():
                raise ProbeFileError(f"{where}, field '{name}': expected a non-empty string")
            values[name] = value
        domain = values["domain"]
        if domain not in DOMAINS:
            raise ProbeFileError(f"{where}, field 'domain': unknown domain {domain!r}")
        probe_id = obj.get("id")
        if probe_id is None:
            probe_id = "f-" + _digest(values["question"], values["subject"], values["predicate"])
        elif isinstance(probe_id, int) and not isinstance(probe_id, bool):
            probe_id = str(probe_id)  # (a file numbering its probes: 7 is the id "7")
        elif not isinstance(probe_id, str) or not probe_id.strip():
            raise ProbeFileError(
                f"{where}, field 'id': expected a non-empty string or a whole number, or no id"
            )
        probes.append(
            Probe(
                probe_id,
                values["question"],
                values["subject"],
                values["predicate"],
                domain,
                origin="file",
            )
        )
    return probes
