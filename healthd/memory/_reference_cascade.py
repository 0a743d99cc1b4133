"""Cascades in the reference memory: a record ends at the first instant after its assertion
at which a key it depends on was left with no value. The dependency side: what a key's
records depend on, which keys depend on it, and the cut a fold asks of each assertion, with
a dependency cycle cascading nothing (see :mod:`healthd.memory.reference`)."""

from __future__ import annotations

import bisect
from collections.abc import Callable

from healthd.memory._reference_store import _DEPS_INDEX, _Store
from healthd.memory._validity import Cut, Folding, LogOp, removals, was_removed
from healthd.model import FactKey


def _no_cut(op: LogOp) -> Cut | None:
    return None


class _Cascades(_Store):
    """The dependencies between keys, and the cascades they make."""

    supersession: bool
    propagation: bool
    _acyclic: bool  # no dependency cycle seen: a key's fold may be resumed
    # keys some record depends on (None: not read from record_deps yet); only a walk
    # along dependencies from one of them can reach a key, so no other needs one
    _depended: set[FactKey] | None

    def _cascade(self, visiting: frozenset[FactKey]) -> Callable[[LogOp], Cut | None]:
        """For an assertion in the fold of the keys in ``visiting``: the first instant after
        it at which one of its dependencies was left with no value. A dependency cycle
        cascades nothing around itself: a dependency that leads back to a key being folded
        is judged by its own log, without what it depends on in that cycle."""

        def cut(op: LogOp) -> Cut | None:
            first: Cut | None = None
            for dep in op.depends_on:
                if dep in visiting:
                    self._acyclic = False
                    continue
                if any(map(self._is_depended_on, visiting)) and self._reachable(dep) & visiting:
                    self._acyclic = False
                    known = self._removals_within(dep, visiting | {dep})
                else:
                    known = self._removals_of(dep)
                index = bisect.bisect_right(known, op.at)
                if index < len(known) and (first is None or known[index] < first[0]):
                    first = (known[index], was_removed(dep))
            return first

        return cut

    def _removals_within(self, key: FactKey, visiting: frozenset[FactKey]) -> list[float]:
        """The key's removals folded afresh, with the cycle through ``visiting`` cut."""
        log = self._log_of(key)
        folding = Folding(multi=log.multi, supersession=self.supersession)
        cascade = self._cascade(visiting) if self.propagation else _no_cut
        for op in log.ops:
            folding.step(op, cascade)
        folding.close()
        return removals(folding.intervals)

    def _depends_on(self, key: FactKey) -> set[FactKey]:
        """The keys the key's records depend on."""
        deps = self._cache.deps.get(key)
        if deps is None and self._cache_complete:
            # every fold of the key set them: it was never folded, and has no record yet
            deps = self._cache.deps[key] = set()
        elif deps is None:
            log = self._log_of(key)
            openers = {
                opened_by
                for (opened_by,) in self._db.execute(
                    "SELECT opened_by FROM records WHERE namespace = ? AND subject = ?"
                    " AND predicate = ?",
                    (self.namespace, key.subject, key.predicate),
                )
            }
            deps = {d for op in log.ops if op.seq in openers for d in op.depends_on}
            self._cache.deps[key] = deps
        return deps

    def _dependencies_readable(self) -> None:
        """The batch's dependency rows written, and a private database's index on them made
        (it makes none until dependents are first read back)."""
        self._flush(dependencies_only=True)
        if self._private:
            self._db.execute(_DEPS_INDEX)

    def _is_depended_on(self, key: FactKey) -> bool:
        """Whether a record depends on the key (or did: a merged record's may be gone)."""
        if self._depended is None:
            self._dependencies_readable()
            self._depended = {
                FactKey(s, p)
                for s, p in self._db.execute(
                    "SELECT DISTINCT subject, predicate FROM record_deps WHERE namespace = ?",
                    (self.namespace,),
                )
            }
        return key in self._depended

    def _reachable(self, start: FactKey) -> set[FactKey]:
        """Every key ``start`` depends on, transitively, through its records."""
        seen: set[FactKey] = set()
        stack = [start]
        while stack:
            for dep in self._depends_on(stack.pop()):
                if dep not in seen:
                    seen.add(dep)
                    stack.append(dep)
        return seen

    def _dependents(self, key: FactKey) -> list[FactKey]:
        """The keys with a record depending on the key, in order: from the cache, the key's
        rows read from the tables the first time it is asked for unless the cache holds every
        key's (nothing flushed for a cascade then)."""
        cache = self._cache
        if not cache.holds_dependents(key):
            self._dependencies_readable()
            cache.dependents[key] = {
                FactKey(subject, predicate): count
                for subject, predicate, count in self._db.execute(
                    "SELECT r.subject, r.predicate, count(*)"
                    " FROM record_deps d JOIN records r ON r.id = d.record_id"
                    " WHERE d.namespace = ? AND d.subject = ? AND d.predicate = ?"
                    " GROUP BY 1, 2",
                    (self.namespace, key.subject, key.predicate),
                )
            }
            assert cache.dependents_read is not None
            cache.dependents_read.add(key)
        return sorted(cache.dependents.get(key, ()))

    def _forget_dependents(self, key: FactKey, rids: list[int], marks: str) -> None:
        """Before the records ``rids`` of the key and their dependency rows are deleted."""
        cache = self._cache
        if cache.dependents_read is not None and not cache.dependents_read:
            return  # no key's dependents are held yet: each is read after this delete
        for subject, predicate in self._db.execute(
            f"SELECT subject, predicate FROM record_deps WHERE record_id IN ({marks})", rids
        ):
            of = FactKey(subject, predicate)
            if not cache.holds_dependents(of):
                continue  # read from the tables, after this delete, when first asked for
            counts = cache.dependents[of]
            counts[key] -= 1
            if not counts[key]:
                del counts[key]
