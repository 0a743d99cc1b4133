"""How the stand-ins (the stand-in LLM's Mem0, Graphiti and Letta responders, the AgentCore
emulator's stand-in strategy) read a conversation and write memories of it, in a ``style``.

Not a model, and it does not decode healthd's sentence grammar: :func:`read` reads English
the way a cautious extractor would, from the text alone: it splits sentences and clauses,
takes off asides in parentheses (keeping a replaced value named in one, "replacing X",
"formerly X"), unwraps frames ("it is no longer true that ...", "the user said that ..."),
and cuts each clause (coordinated clauses apart) into subject, verb group and object with
closed word classes of English (auxiliaries, adverbs, prepositions, participles); "the A of
B" and "B's A" are B's attribute A, "changed from X to Y" a transition, a trailing number a
version of the object's head, "@bob owns x" the passive "x is owned by @bob", a note
"x — owner: y" or "x: retired" what it abbreviates. Whatever it writes it reads back as the
fact it states (its subject "it" where it was left implicit).

``style`` is the stand-ins' knob (``--style`` on ``python -m healthd.testing.standin_llm``,
``python -m healthd.testing.agentcore_events`` and ``scripts/with_standin_llm.py``):

- ``verbatim``: the stand-ins as they were before styles existed (their figures unchanged).
- ``varied`` (the default): each clause read is written as a memory as an unkind LLM would,
  drawn deterministically from ``seed`` and the clause's own text, in these proportions (one
  draw per clause, :data:`PROPORTIONS`), then in one of five registers (:data:`REGISTERS`,
  equally likely):

  ==========  =====  =============================================================================
  behaviour   share  what the memory says
  ==========  =====  =============================================================================
  dropped     0.05   nothing: the fact is not extracted
  stale       0.07   a change's old value as current, or a "no longer" fact as still true (only
                     a clause that carries a change; another clause is paraphrased instead)
  invented    0.06   the fact with a value no one said (a version bumped, another handle, a
                     technology named nowhere in the conversation); a clause that only says
                     something exists is paraphrased instead
  implicit    0.15   the fact with its subject left as "it" / "they"
  merged      0.15   the fact and another subject's fact from the conversation in one memory
                     (paraphrased instead when the conversation names no other subject)
  paraphrase  0.52   the fact alone, reworded
  neighbour   0.12   (drawn apart, besides the above) one more memory: the fact credited to a
                     neighbouring subject of the conversation (one sharing a name's stem, else
                     the one named last)
  ==========  =====  =============================================================================

Every figure measured through ``varied`` is the stand-in's choices as much as the product's;
it is labelled "stand-in style varied" wherever it is shown.

``noise`` (``--noise SHARE``, 0 by default) makes a stand-in as unsteady as a real LLM, which
does not extract the same memories from the same conversation twice (:class:`Noise`): the
n-th time it is asked about the same turns (the n-th replay of a history), each memory it
would write is, with probability SHARE, drawn from ``seed``, the turns and n, written
otherwise: skipped (half of those), or phrased in another register (the other half; a
memory it cannot read back is skipped). With ``noise = 0`` every replay is the same.
"""

from __future__ import annotations

import hashlib
import random
import re
import threading
from dataclasses import dataclass, field, replace

STYLES = ("varied", "verbatim")
DEFAULT_STYLE = "varied"
DEFAULT_SEED = 0

PROPORTIONS: tuple[tuple[str, float], ...] = (
    ("dropped", 0.05),
    ("stale", 0.07),
    ("invented", 0.06),
    ("implicit", 0.15),
    ("merged", 0.15),
    ("paraphrase", 0.52),
)
NEIGHBOUR = 0.12
REGISTERS = ("plain", "reported", "note", "current", "active")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# closed word classes of English (and a few common relational verbs)
_AUX = _words(
    "is are was were be been being has have had does do did will would remains remain stays "
    "became becomes"
)
_VERBS = _words(
    "depends depend requires require uses use runs run owns own maintains maintain exists exist "
    "changed moved switched publishes stores reads writes calls handles leads manages needs "
    "existed relies replaced migrated"
)
_ADVERBS = _words("no longer not still now currently also already never again")
_PREPS = _words("by in on for to from of with at as into onto off upon under via")
_PARTICIPLES = _words("written run built kept known held made done set led")
# transitive verbs an active clause normalises to the passive ("@bob owns x": x owned by @bob)
_ACTIVE = {"owns": "owned", "own": "owned", "maintains": "maintained", "maintain": "maintained",
           "manages": "managed", "manage": "managed", "leads": "led", "lead": "led",
           "runs": "run", "run": "run"}  # fmt: skip
_DETERMINERS = _words("the a an this that its their his her of")
_FRAME = re.compile(
    r"^it (?:is|was) (?P<neg>no longer |not )?(?:true|the case) that (?P<rest>.+)$", re.I
)
_REPORT = re.compile(
    r"^(?:(?:the )?(?:user|team|assistant) (?:said|says|mentioned|noted|reported)(?: that)?"
    r"|noted:|note:|fyi:?|as of [\w-]+,)\s+(.+)$",
    re.I,
)
_NOTE = re.compile(r"^(?P<s>[^—–:]+?)\s+[—–]\s+(?P<r>[^:]+?):\s*(?P<v>.+)$")  # "x — owner: y"
_STATUS = re.compile(r"^(?P<s>[^—–:]+?):\s*(?P<v>in service|live|retired|gone)$", re.I)
_POSSESSIVE = re.compile(r"^(?:(?P<s>.+?)'s|(?P<p>its|their))\s+(?P<a>.+)$", re.I)
PRONOUNS = frozenset({"it", "they", "its", "their"})
_ASIDE = re.compile(r"\s*\(([^()]*)\)")
_OLD = re.compile(r"^(?:replacing|formerly|previously|was|it was|instead of)\s+(.+)$", re.I)
_DATE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)*(?:[-+.][\w.]+)?$")
_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z@\"'(])|;\s+|\n+")


@dataclass(frozen=True)
class Claim:
    """A clause as read: ``subject`` ``verb`` ``value`` ("billing" "is owned by" "@bob"), or
    an attribute ``attr`` of the subject ("the language of auth-service is go")."""

    subject: str
    verb: str
    value: str
    attr: str = ""
    negated: bool = False
    old: str | None = None

    @property
    def relation(self) -> str:
        """What the clause says of its subject, without tense or adverbs: its topic's name."""
        if self.attr:
            return self.attr.lower()
        words = [w for w in self.verb.lower().split() if w not in _AUX and w not in _ADVERBS]
        return " ".join(words) or "is"

    @property
    def topic(self) -> tuple[str, str]:
        return self.subject.casefold(), self.relation


def read(text: str) -> list[Claim]:
    """The claims of a text, clause by clause; a clause without a subject and a verb is
    skipped, as chatter would be."""
    out: list[Claim] = []
    for sentence in _SPLIT.split(text):
        for clause in _coordinated(sentence):
            claim = read_clause(clause)
            if claim is not None:
                out.append(claim)
    return out


def _coordinated(sentence: str) -> list[str]:
    """ "x is a, and y is b" as two clauses where what follows the conjunction is a clause
    of its own (a list of values, "a, b, and c", stays one)."""
    parts = re.split(r",\s+(?:and|but|while)\s+", sentence)
    out = [parts[0]]
    for part in parts[1:]:
        if read_clause(part) is not None:
            out.append(part)
        else:
            out[-1] = f"{out[-1]}, and {part}"
    return out


def dates(text: str) -> list[str]:
    return _DATE.findall(text)


def read_clause(clause: str) -> Claim | None:
    old: str | None = None
    for aside in _ASIDE.findall(clause):
        found = _OLD.match(aside.strip())
        if found:
            old = _unquote(found.group(1))
    clause = _ASIDE.sub("", clause).strip().rstrip(".!?").strip()
    negated = False
    for _ in range(3):  # frames within frames
        framed = _FRAME.match(clause) or _REPORT.match(clause)
        if framed is None:
            break
        if framed.re is _FRAME:
            negated = negated or bool(framed["neg"])
            clause = framed["rest"]
        else:
            clause = framed.group(1)
    claim = _note(clause) or _svo(clause.split())
    if claim is None:
        return None
    if old is not None and claim.old is None:
        claim = replace(claim, old=old)
    return replace(claim, negated=True) if negated and not claim.negated else claim


def _note(clause: str) -> Claim | None:
    """A note's "subject — relation: value" or "subject: in service"."""
    status = _STATUS.match(clause)
    if status:
        gone = status["v"].lower() in ("retired", "gone")
        return Claim(_unquote(status["s"]), "exists", "true", negated=gone)
    note = _NOTE.match(clause)
    if note is None:
        return None
    subject, relation, value = _unquote(note["s"]), note["r"].strip(), _unquote(note["v"])
    negated = bool(re.match(r"(?:not|no longer)\s", value, re.I))
    value = re.sub(r"^(?:not|no longer)\s+", "", value, flags=re.I)
    words = relation.lower().split()
    if any(w in _PREPS or w in _VERBS or w in _AUX or w.endswith("ed") for w in words):
        return Claim(subject, relation, value, negated=negated)
    return Claim(subject, "is", value, attr=relation, negated=negated)


def _is_verb(words: list[str], at: int) -> bool:
    word = words[at].lower()
    if word in _AUX or word in _VERBS:
        return True
    before = words[at - 1].lower()
    return (
        word.isalpha()
        and word.endswith(("s", "ed"))
        and len(word) > 3
        and before not in _DETERMINERS
        and before not in _PREPS
    )


def _svo(words: list[str]) -> Claim | None:
    start = next((i for i in range(1, len(words)) if _is_verb(words, i)), None)
    if start is None:
        return None
    while start > 1 and words[start - 1].lower() in _ADVERBS:  # "x no longer exists"
        start -= 1
    subject = _unquote(" ".join(words[:start]))
    end = start + 1
    seen_prep = False
    while end < len(words):
        word = words[end].lower()
        nxt = words[end + 1].lower() if end + 1 < len(words) else ""
        if word in _PREPS:
            seen_prep = True
        elif not (
            word in _AUX
            or word in _VERBS
            or word in _ADVERBS
            or word in _PARTICIPLES
            or (word.isalpha() and word.endswith("ed"))
            or (seen_prep and word.isalpha() and nxt in _PREPS)
        ):
            break
        end += 1
    verb_words = words[start:end]
    lowered = [w.lower() for w in verb_words]
    negated = "not" in lowered or ("no" in lowered and "longer" in lowered)
    verb = " ".join(w for w in verb_words if w.lower() not in ("no", "longer", "not", "still"))
    rest = words[end:]
    old: str | None = None
    if lowered and lowered[-1] == "from" and "to" in [w.lower() for w in rest]:  # from X to Y
        cut = [w.lower() for w in rest].index("to")
        old, rest = _unquote(" ".join(rest[:cut])), rest[cut + 1 :]
        verb = "is"
    value = _unquote(" ".join(rest))
    if not value:
        if lowered and lowered[-1] in ("exists", "exist", "existed"):
            return Claim(subject, "exists", "true", negated=negated)
        if "exist" in lowered:  # "does not exist"
            return Claim(subject, "exists", "true", negated=negated)
        return None
    attr = ""
    possessive = _POSSESSIVE.match(subject)
    if possessive and verb.lower().split()[0] in _AUX:
        pronoun = (possessive["p"] or "").lower()
        owner = {"its": "It", "their": "They"}.get(pronoun) or possessive["s"]
        verb = "is" if verb.lower() in ("is", "are", "was") else verb
        return Claim(owner, verb, value, attr=possessive["a"], negated=negated, old=old)
    genitive = re.match(r"^(?:the\s+)?(?P<a>.+)\s+of\s+(?P<s>\S.*)$", subject, re.I)
    if genitive and verb.lower().split()[:1] and verb.lower().split()[0] in _AUX:
        attr, subject = genitive["a"], genitive["s"]
        attr = re.sub(r"^(?:the)\s+", "", attr, flags=re.I)
        if len(verb.split()) == 1 or verb.lower() in ("is", "are", "was"):
            verb = "is"
    if verb.lower() in _ACTIVE and " " not in value:
        return Claim(value, f"is {_ACTIVE[verb.lower()]} by", subject, negated=negated, old=old)
    head = value.rsplit(" ", 1)
    if not attr and len(head) == 2 and _VERSION.match(head[1]) and " " not in head[0]:
        verb, value = f"{verb} {head[0]}", head[1]
    return Claim(subject, verb, value, attr=attr, negated=negated, old=old)


def _unquote(text: str) -> str:
    return text.strip().strip("\"'“”").strip()


# -- writing ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Memory:
    """A memory the stand-in writes: its text, what it is about as written (``claim``: the
    value it states, ``None`` for a memory of two facts' text only), and which behaviours of
    the style made it (for tests and the documented proportions)."""

    text: str
    claim: Claim
    kinds: frozenset[str] = field(default_factory=frozenset)
    register: str = "plain"


def rng_for(seed: int, *parts: str) -> random.Random:
    digest = hashlib.sha256("\x1f".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def behaviour(rng: random.Random) -> str:
    draw, total = rng.random(), 0.0
    for name, share in PROPORTIONS:
        total += share
        if draw < total:
            return name
    return "paraphrase"


def write(
    claim: Claim,
    *,
    seed: int = DEFAULT_SEED,
    key: str = "",
    context: list[Claim] | None = None,
    said: str = "",
    day: str | None = None,
) -> list[Memory]:
    """The memories a varied stand-in writes for one claim: none, one, or two (with a
    neighbour's). ``key`` is the text the draw is seeded by (the clause as said), ``context``
    the other claims of the conversation (for merges and neighbours), ``said`` the whole
    conversation (an invented value is one it never names), ``day`` a date to ground in."""
    rng = rng_for(seed, key or _plain(claim))
    kind = behaviour(rng)
    register = REGISTERS[rng.randrange(len(REGISTERS))]
    neighbour_draw = rng.random()
    others = [
        c
        for c in context or []
        if c.subject.casefold() != claim.subject.casefold() and c.subject.casefold() not in PRONOUNS
    ]
    kinds: set[str] = set()
    out: list[Memory] = []
    stated = claim
    if kind == "dropped":
        return []
    if kind == "stale":
        if claim.old is not None:
            stated, kinds = replace(claim, value=claim.old, old=None, negated=False), {"stale"}
        elif claim.negated:
            stated, kinds = replace(claim, negated=False), {"stale"}
    elif kind == "invented" and claim.relation != "exists":
        stated, kinds = replace(claim, value=invent(claim.value, rng, said)), {"invented"}
    text = render(stated, register, rng, day=day)
    if kind == "implicit":
        text, kinds = render(stated, register, rng, day=day, pronoun=True), {"implicit"}
    elif kind == "merged" and others:
        other = others[rng.randrange(len(others))]
        joint = rng.choice(("; ", ", and ", ". Also, "))
        second = render(other, "plain", rng)
        lead = second[:1] if joint.startswith(".") else second[:1].lower()
        text = f"{text.rstrip('.')}{joint}{lead}{second[1:]}"
        kinds = {"merged"}
    out.append(Memory(text, stated, frozenset(kinds or {"paraphrase"}), register))
    if neighbour_draw < NEIGHBOUR and others and not claim.negated:
        near = neighbour(claim, others)
        moved = replace(claim, subject=near, old=None)
        out.append(Memory(render(moved, "plain", rng, day=day), moved, frozenset({"neighbour"})))
    return out


def neighbour(claim: Claim, others: list[Claim]) -> str:
    """The subject nearest the claim's among others': one sharing its name's stem, else one
    said to have the same relation, else one of the same kind (a handle or not), else the one
    named last."""

    def stem(name: str) -> str:
        return re.split(r"[-_./ ]", name.casefold().lstrip("@"))[0]

    handle = claim.subject.startswith("@")
    for test in (
        lambda c: stem(c.subject) == stem(claim.subject),
        lambda c: c.relation == claim.relation,
        lambda c: c.subject.startswith("@") == handle,
    ):
        for other in reversed(others):
            if test(other):
                return other.subject
    return others[-1].subject


_INVENTED_TECH = (
    "Elixir", "Pulsar", "Rust", "CockroachDB", "Scala", "RabbitMQ", "NATS", "Haskell",
    "DynamoDB", "Zig", "Clojure", "Cassandra",
)  # fmt: skip
_INVENTED_PEOPLE = ("@kim", "@lee", "@ana", "@ben", "@omar", "@priya", "@sven", "@yuki")


def invent(value: str, rng: random.Random, said: str = "") -> str:
    """A value no one said, of the same kind as ``value``."""
    lowered = said.casefold()
    if _VERSION.match(value):
        parts = value.lstrip("v").split(".")
        digits = [p for p in parts if p.isdigit()]
        if digits:
            bumped = [*parts[:-1], str(int(parts[-1]) + 1 + rng.randrange(3))]
            if not parts[-1].isdigit():
                bumped = [str(int(parts[0]) + 1), *parts[1:]]
            return ("v" if value.startswith("v") else "") + ".".join(bumped)
    pool = _INVENTED_PEOPLE if value.startswith("@") else _INVENTED_TECH
    fresh = [p for p in pool if p.casefold() not in lowered and p.casefold() != value.casefold()]
    return rng.choice(fresh or list(pool))


def _plain(claim: Claim) -> str:
    return render(claim, "plain", random.Random(0))


def _negate(verb: str) -> str:
    words = verb.split()
    if words and words[0].lower() in _AUX:
        return " ".join([words[0], "no longer", *words[1:]])
    return " ".join(["no longer", *words])


def render(
    claim: Claim,
    register: str,
    rng: random.Random,
    *,
    day: str | None = None,
    pronoun: bool = False,
) -> str:
    """The claim as a memory's text in a register."""
    subject = claim.subject
    if pronoun:
        subject = "They" if subject.startswith("@") else "It"
    verb = _negate(claim.verb) if claim.negated else claim.verb
    if claim.relation == "exists":
        body = f"{subject} {'no longer exists' if claim.negated else 'exists'}"
        if register == "note":
            body = f"{subject}: {'retired' if claim.negated else 'in service'}"
    elif claim.attr:
        copula = "is no longer" if claim.negated else "is"
        owner = ("their" if subject == "They" else "its") if pronoun else f"{subject}'s"
        body = {
            "plain": f"the {claim.attr} of {subject} is",
            "note": f"{subject} — {claim.attr}:",
            "current": f"{owner} {claim.attr} is currently",
            "active": f"{owner} {claim.attr} is",
        }.get(register, f"the {claim.attr} of {subject} is")
        if pronoun and register in ("plain", "reported"):
            body = f"{owner} {claim.attr} is"
        body = body.replace(" is", f" {copula}", 1) if claim.negated else body
        body = f"{body} {claim.value}"
    elif register == "note":
        body = f"{subject} — {claim.relation}: {'not ' if claim.negated else ''}{claim.value}"
    elif register == "active" and _active(claim) and not pronoun:
        active = str(_active(claim))
        if re.search(r"\band\b|\s@", claim.value):  # "@bob and @carol own billing"
            active = active[:-1]
        body = f"{claim.value} {'no longer ' if claim.negated else ''}{active} {subject}"
    elif register == "current" and not claim.negated:
        words = verb.split()
        if words and words[0].lower() in _AUX:
            body = " ".join([subject, words[0], "currently", *words[1:], claim.value])
        else:
            body = f"{subject} currently {verb} {claim.value}"
    else:
        body = f"{subject} {verb} {claim.value}"
    if register == "reported":
        lead = rng.choice(("User mentioned that", "The user said", "Noted:"))
        body = f"{lead} {body[:1].lower()}{body[1:]}"
    text = f"{body[:1].upper()}{body[1:]}."
    if day and rng.random() < 0.5:
        text = rng.choice((f"As of {day}, {text[:1].lower()}{text[1:]}", f"{text[:-1]} ({day})."))
    return text


def _active(claim: Claim) -> str | None:
    """ "is owned by" as "owns": a passive "by" verb in the active voice."""
    words = claim.verb.lower().split()
    if len(words) >= 3 and words[0] in _AUX and words[-1] == "by" and words[-2].endswith("ed"):
        return words[-2][:-2] + "s"
    return None


class Noise:
    """A stand-in's run-to-run variation: ``share`` of the memories it writes for a
    conversation written otherwise, differently each time the same conversation comes again
    (the replay number n counted per ``key``, the turns as said), deterministically for the
    seed. Thread-safe: one per server."""

    def __init__(self, share: float = 0.0) -> None:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"noise must be a share from 0 to 1, not {share!r}")
        self.share = share
        self._seen: dict[str, int] = {}
        self._lock = threading.Lock()

    def replay(self, key: str) -> int:
        """How many times ``key`` was asked about before (0 the first time)."""
        with self._lock:
            n = self._seen.get(key, 0)
            self._seen[key] = n + 1
        return n

    def vary(self, texts: list[str], *, seed: int, key: str, day: str | None = None) -> list[str]:
        """``texts`` (the memories written for the turns ``key``) as this replay writes them."""
        if not self.share:
            return texts
        n = self.replay(key)
        out: list[str] = []
        for i, text in enumerate(texts):
            rng = rng_for(seed, "noise", key, str(n), str(i))
            if rng.random() >= self.share:
                out.append(text)
                continue
            claims = read(text)
            if rng.random() < 0.5 or len(claims) != 1:
                continue  # skipped: this replay's extraction leaves the fact out
            register = REGISTERS[rng.randrange(len(REGISTERS))]
            out.append(render(claims[0], register, rng, day=day))
        return out
