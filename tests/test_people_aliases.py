"""People as the sources name them, end to end (issue 38, item 3): a repository whose
CODEOWNERS names ``@klee`` and whose Backstage catalog has a User ``klee`` with the profile
"Kim Lee" / kim.lee@acme.io, and a team's HTTP text memory saying "Kim Lee owns checkout":
the run hands the sources' identity records to the reader, which reads the display name as
``@klee``, so the memory's answer is current, not an invented value."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from people_repo import OWNERS, SAYS, _git, make_repo, sources, team
from text_memory_service import TextMemoryService

from healthd.model import FactKey
from healthd.reading import build_reader, with_people
from healthd.reading.aliases import Person
from healthd.sources import build_source, pull_from_start


def write_config(tmp: Path, service: TextMemoryService) -> Path:
    lines = [f"state_path = {json.dumps(str(tmp / 'state.sqlite'))}", ""]
    for section, table in (
        ("sources", sources(make_repo(tmp / "repo"))),
        ("targets", {"team": team(service)}),
    ):
        for name, options in table.items():
            lines.append(f"[{section}.{name}]")
            lines.extend(f"{k} = {json.dumps(v)}" for k, v in options.items())
            lines.append("")
    config = tmp / "healthd.toml"
    config.write_text("\n".join(lines))
    return config


def test_the_sources_hand_their_identity_records_to_the_run(tmp_path):
    repo = make_repo(tmp_path / "repo")
    options = {
        name: {k: v for k, v in o.items() if k != "kind"} for name, o in sources(repo).items()
    }
    code = pull_from_start(build_source("git", "code", options["code"]))
    assert code.people == [Person("@klee")]
    catalog = pull_from_start(build_source("backstage", "catalog", options["catalog"]))
    assert catalog.people == [Person("klee", ("Kim Lee",), ("kim.lee@acme.io",))]
    # the timeline's JSONL is what it was: identity records are not events
    assert not any("Kim Lee" in json.dumps(e.metadata) for e in catalog.events)


def test_only_people_whose_records_tie_spellings_change_the_reader():
    reader = build_reader()
    lone = with_people(reader, [Person("@bob"), Person(emails=("ann.lee@acme.io",))])
    assert lone.label == "default-9"
    kim = with_people(reader, [Person("@klee"), Person("klee", ("Kim Lee",))])
    assert kim.label.startswith("default-9:people=") and kim.label != reader.label


def test_evaluate_config_reads_a_display_name_as_the_codeowners_handle(tmp_path):
    with TextMemoryService(silent_on={OWNERS}, says={OWNERS: SAYS}) as service:
        done = subprocess.run(
            [sys.executable, "-m", "healthd", "evaluate", "--config"]
            + [str(write_config(tmp_path, service)), "--format", "json"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    (target,) = json.loads(done.stdout)["targets"]
    (probe,) = (p for p in target["final"]["probes"] if (p["subject"], p["predicate"]) == OWNERS)
    assert probe["expected"] == ["@klee"]
    (item,) = (s for s in probe["served"] if s["text"] == SAYS)
    assert item["read_as"]["asserted"] == ["@klee"] and item["read_as"]["other"] == []
    assert [(f["value"], f["status"]) for f in probe["retrieved"]] == [("@klee", "current")]
    assert target["reader"].startswith("default-9:people=")
    assert target["reading"]["invented"] == 0


COMPONENT_OWNED_BY_A_USER = """\
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
spec:
  type: service
  lifecycle: production
  owner: user:klee
"""


def test_a_catalog_owner_that_is_a_user_is_read_in_every_spelling_texts_give(tmp_path):
    repo = make_repo(tmp_path / "repo")
    with (repo / "catalog-info.yaml").open("a") as catalog:
        catalog.write(COMPONENT_OWNED_BY_A_USER)
    _git(repo, "commit", "-qam", "checkout owned by a user")
    options = {k: v for k, v in sources(repo)["catalog"].items() if k != "kind"}
    pulled = pull_from_start(build_source("backstage", "catalog", options))
    (owner,) = (e.fact for e in pulled.events if e.fact.predicate == "owner")
    assert (owner.subject, owner.value) == ("checkout", "user:klee")
    reader = with_people(build_reader(), pulled.people)
    key = owner.key
    for text in (
        "Kim Lee owns checkout.",
        "checkout is owned by klee",
        "@klee owns checkout",
        "checkout: owner kim.lee@acme.io",
        "checkout is owned by user:default/klee",
    ):
        assert reader.read(text, key, ["user:klee"]).asserted == ("user:klee",), text
    for text in ("checkout is owned by group:klee", "checkout lives at github.com/klee"):
        assert reader.read(text, key, ["user:klee"]).asserted == (), text
    # without the catalog's identity data the reference alone is all a text can say
    plain = build_reader()
    assert plain.read("Kim Lee owns checkout.", key, ["user:klee"]).asserted == ()
    assert plain.read("checkout is owned by user:klee", key, ["user:klee"]).asserted == (
        "user:klee",
    )


def test_two_people_with_one_display_name_stay_two_people():
    """An org has two John Smiths (Backstage Users jsmith and jsmith2): a shared display
    name is no evidence they are one person. checkout passed from jsmith2 to jsmith, and a
    memory still saying jsmith2 owns it is read as naming jsmith2, the past owner, never as
    the current one; "John Smith" alone names neither."""
    people = [
        Person("jsmith", ("John Smith",), ("john.smith@acme.io",)),
        Person("jsmith2", ("John Smith",), ("john.smith2@acme.io",)),
        Person("@jsmith"),
    ]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owner")
    for values in (["user:jsmith", "user:jsmith2"], ["user:jsmith2", "user:jsmith"]):
        for text in ("checkout is owned by jsmith2", "@jsmith2 owns checkout"):
            assert reader.read(text, key, values).asserted == ("user:jsmith2",), (text, values)
        assert reader.read("@jsmith owns checkout", key, values).asserted == ("user:jsmith",)
        assert reader.read("John Smith owns checkout", key, values).asserted == ()


CONTRACTOR_NAMED_LIKE_A_USER = """\
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: alice
  namespace: contractors
spec:
  profile:
    displayName: Alice Chen
  memberOf: []
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata:
  name: alice
spec:
  profile:
    displayName: Alice Wong
  memberOf: []
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata:
  name: checkout
spec:
  type: service
  lifecycle: production
  owner: user:contractors/alice
"""


def test_users_of_one_name_in_two_namespaces_are_two_people(tmp_path):
    """`user:default/alice` and `user:contractors/alice` are two entities (a reference is
    ``[<kind>:][<namespace>/]<name>``): Alice Wong is not Alice Chen, who owns checkout."""
    repo = make_repo(tmp_path / "repo")
    with (repo / "catalog-info.yaml").open("a") as catalog:
        catalog.write(CONTRACTOR_NAMED_LIKE_A_USER)
    _git(repo, "commit", "-qam", "a contractor owns checkout")
    options = {k: v for k, v in sources(repo)["catalog"].items() if k != "kind"}
    pulled = pull_from_start(build_source("backstage", "catalog", options))
    (owner,) = (e.fact for e in pulled.events if e.fact.predicate == "owner")
    assert owner.value == "user:contractors/alice"
    reader = with_people(build_reader(), pulled.people)
    for values in (
        ["user:contractors/alice", "user:alice"],
        ["user:alice", "user:contractors/alice"],
    ):
        for text, named in (
            ("Alice Chen owns checkout.", "user:contractors/alice"),
            ("checkout is owned by user:contractors/alice", "user:contractors/alice"),
            ("Alice Wong owns checkout.", "user:alice"),
            ("checkout is owned by user:default/alice", "user:alice"),
        ):
            assert reader.read(text, owner.key, values).asserted == (named,), (text, values)


def test_a_github_noreply_email_names_its_login(tmp_path):
    """GitHub's noreply addresses are its users' logins (`ID+login@users.noreply.github.com`,
    before July 2017 `login@users.noreply.github.com`): a CODEOWNERS owner written so is
    @octocat, whom a memory names by the login."""
    repo = make_repo(tmp_path / "repo")
    noreply = "583231+octocat@users.noreply.github.com"
    older = "hubot@users.noreply.github.com"
    (repo / "CODEOWNERS").write_text(f"/billing/ {noreply}\n/search/ {older}\n")
    _git(repo, "commit", "-qam", "owners by their noreply addresses")
    options = {k: v for k, v in sources(repo)["code"].items() if k != "kind"}
    pulled = pull_from_start(build_source("git", "code", options))
    reader = with_people(build_reader(), pulled.people)
    for subject, owner, login in (("/billing/", noreply, "octocat"), ("/search/", older, "hubot")):
        (fact,) = (e.fact for e in pulled.events if e.fact.subject == subject)
        assert fact.value == owner
        for text in (f"@{login} owns {subject}", f"{subject} is owned by {login}"):
            assert reader.read(text, fact.key, [owner]).asserted == (owner,), text
        assert reader.read(f"@{login}2 owns {subject}", fact.key, [owner]).asserted == ()


def test_a_display_name_is_found_in_any_case_the_text_writes_it():
    """Lower-casing "İlker" gives "i" and a combining dot, which no text writes, and "Groß"
    is "GROSS" in capitals: the names as the catalog gives them, in capitals and in lower
    case, name their person."""
    people = [Person("isahin", ("İlker Şahin",)), Person("jgross", ("Jörg Groß",))]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owners")
    for text, owner in (
        ("İlker Şahin owns checkout", "@isahin"),
        ("checkout is owned by ilker şahin", "@isahin"),
        ("Jörg Groß owns checkout", "@jgross"),
        ("checkout is owned by JÖRG GROSS", "@jgross"),
        ("checkout is owned by Jörg Gross", "@jgross"),
    ):
        assert reader.read(text, key, [owner]).asserted == (owner,), text


def test_owners_as_github_jira_and_backstage_write_them_are_people():
    """GitHub gives an area's owners as logins ("alice bob"), Jira as accountIds or
    e-mails, Backstage as "team-a" or "user:klee": people as much as CODEOWNERS' "@alice",
    so a text that does not name the subject says nothing of who owns it, and working on
    it is not owning it."""
    key = FactKey("billing", "owners")
    reader = build_reader()
    for values in (
        ["alice", "bob"],
        ["alice@acme.io", "bob@acme.io"],
        ["user:alice", "user:bob"],
        ["@alice", "@bob"],
    ):
        alice, bob = values
        for text in (f"{alice} has been away since Monday", f"{alice} works at Acme Corp"):
            assert reader.read(text, key, values).asserted == (), (text, values)
        for text in (f"{alice} works on billing", f"{alice} mentors {bob} on billing"):
            assert reader.read(text, key, values).asserted == (), (text, values)
        text = f"billing is owned by {alice}; {alice} mentors {bob}"
        assert reader.read(text, key, values).asserted == (alice,), (text, values)


def test_a_one_word_display_name_is_no_spelling_of_its_person():
    """A profile whose display name is one word ("Will", "A") names a person no more than a
    first name does: "@bob owns checkout and will keep it" is Bob's, not @wsmith's too,
    and "a team" is no one; such texts read as they do without the people."""
    reader = with_people(build_reader(), [Person("wsmith", ("Will",)), Person("alee", ("A",))])
    key = FactKey("checkout", "owners")
    for values in (["@wsmith", "@bob"], ["@alee", "@bob"]):
        for text in (
            "@bob will own checkout from Monday",
            "@bob owns checkout and will keep it",
            "checkout: will be owned by @bob",
            "checkout is owned by a team of @bob",
        ):
            reading = reader.read(text, key, values)
            assert reading == build_reader().read(text, key, values), (text, values)
            assert values[0] not in reading.asserted, (text, values)


def test_a_large_org_s_people_are_read_as_a_small_one_s():
    """A catalog of 20,000 Users: an owner named by display name is still read as its
    handle. (What it costs is in benchmarks/bench_reader.py --people: the table was built by
    comparing each record with every person so far, 22 s, and each reading looked through
    every person, 70 ms against 0.4 ms without people.)"""
    people = [
        Person(f"user{i}", (f"First{i} Last{i}",), (f"first{i}.last{i}@acme.io",))
        for i in range(20_000)
    ]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owners")
    values = [f"@user{i}" for i in range(20)]
    reading = reader.read("checkout is owned by First3 Last3", key, values)
    assert reading.asserted == ("@user3",)


def test_a_display_name_written_with_ss_is_found_where_a_text_writes_sharp_s():
    """Unicode folds "ß" and "ss" alike (str.casefold: "GROSS" is "Groß"), and a
    directory often spells a name in ASCII or capitals ("Jörg GROSS"): a text writing
    "Jörg Groß" names that person as much as one writing "Jörg Gross"."""
    people = [Person("jgross", ("Jörg GROSS",)), Person("kstrasser", ("Kai Strasser",))]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owners")
    for text, owner in (
        ("Jörg Groß owns checkout", "@jgross"),
        ("checkout is owned by jörg gross", "@jgross"),
        ("checkout is owned by Kai Straßer", "@kstrasser"),
    ):
        assert reader.read(text, key, [owner]).asserted == (owner,), text


def test_a_name_two_sources_give_still_names_the_owner_the_key_holds():
    """Kim Lee is the Backstage User klee and, to Jira, an accountId whose e-mail her
    profile hides: nothing ties the two records, but no other owner of checkout is called
    Kim Lee, so "Kim Lee owns checkout" names user:klee. Two of a key's owners of one name
    (jsmith and jsmith2, "John Smith") stay named by neither."""
    people = [
        Person("klee", ("Kim Lee",), ("kim.lee@acme.io",)),
        Person("5b10a2844c20165700ede21g", ("Kim Lee",)),
        Person("jsmith", ("John Smith",), ("john.smith@acme.io",)),
        Person("jsmith2", ("John Smith",), ("john.smith2@acme.io",)),
    ]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owner")
    assert reader.read("Kim Lee owns checkout", key, ["user:klee"]).asserted == ("user:klee",)
    values = ["user:jsmith", "user:jsmith2"]
    assert reader.read("John Smith owns checkout", key, values).asserted == ()
    values = ["@klee", "klee"]  # one person, as two sources write her
    assert reader.read("Kim Lee owns checkout", key, values).asserted == ("@klee",)


def test_a_name_in_a_script_written_without_spaces_names_its_person():
    """Chinese, Japanese and Korean write a full name without a space between family and
    given name ("王小明", "김민수"): such a name is a full name, not a first name alone, and
    names its person as "Kim Lee" does."""
    people = [Person("xwang", ("王小明",)), Person("mkim", ("김민수",))]
    reader = with_people(build_reader(), people)
    key = FactKey("checkout", "owners")
    for text, owner in (
        ("王小明 owns checkout", "@xwang"),
        ("checkout is owned by 김민수", "@mkim"),
    ):
        assert reader.read(text, key, [owner]).asserted == (owner,), text
