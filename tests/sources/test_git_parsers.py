"""The CODEOWNERS and manifest parsers on their own, and fuzzed: any text, never an
exception (a manifest that cannot be read is reported, not raised)."""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from healthd.sources._codeowners import parse_codeowners
from healthd.sources._languages import language_of, main_language
from healthd.sources._manifests import (
    parse_cargo_toml,
    parse_central_packages,
    parse_composer_json,
    parse_gemfile_lock,
    parse_go_mod,
    parse_gradle_catalog,
    parse_msbuild_project,
    parse_packages_config,
    parse_pipfile,
    parse_pom_xml,
    parse_pubspec,
    parse_pyproject,
    parse_requirement,
    parse_requirements_txt,
    try_parse_manifest,
)
from healthd.sources.git import edit_matters


def test_codeowners_last_line_wins_owners_sorted_comments_and_sections_ignored():
    text = (
        "# comment\n*.js @b @a\n[Backend] @lead\n/api/ @x # inline\n"
        "*.js @c\n/docs/\\#x @w\n/unowned/\n"
    )
    assert parse_codeowners(text) == {"/api/": "@x", "*.js": "@c", "/docs/#x": "@w"}


def test_codeowners_emails_and_teams_are_owners():
    assert parse_codeowners("* dev@example.com @org/team-a\n") == {
        "*": "@org/team-a dev@example.com"
    }


@pytest.mark.parametrize(
    "line, expected",
    [
        ("requests>=2.31,<3", ("requests", ">=2.31,<3")),
        ("Foo_Bar[extra] == 1.0 ; python_version < '3.12'", ("foo-bar", "==1.0")),
        ("pkg @ https://example.com/pkg.whl", ("pkg", "@ https://example.com/pkg.whl")),
        ("plain", ("plain", "*")),
        ("not a requirement!", None),
    ],
)
def test_pep508_requirements(line, expected):
    assert parse_requirement(line) == expected


def test_requirements_txt_skips_options_urls_and_comments():
    text = (
        "-i https://pypi.org/simple\n--requirement base.txt\n-e git+https://x#egg=y\n"
        "https://example.com/a.whl\n./local\nflask==3.0.0 # web\n#gone==1\n"
        "numpy>=1.26 \\\n    --hash=sha256:abc\n"
    )
    assert parse_requirements_txt(text) == {"flask": "==3.0.0", "numpy": ">=1.26"}


def test_requirements_txt_reads_what_pip_reads_and_names_what_pip_would_refuse():
    # pip joins a tab-indented option, fills ${NAME} from the environment, and takes file:
    # as a URL; a quoted line it refuses
    text = (
        "pkg==1.0 \\\n\t--hash=sha256:abc\nver==${VERSION}\nfile:../local#egg=x\n"
        '"quoted[extra]"\nok>=1,<2\n'
    )
    dropped: list[str] = []
    assert parse_requirements_txt(text, dropped) == {
        "pkg": "==1.0",
        "ver": "==${VERSION}",
        "ok": ">=1,<2",
    }
    assert dropped == ["'\"quoted[extra]\"' is not a requirement"]


@pytest.mark.parametrize(
    "text, expected",
    [
        # a comment line never goes on to the next (pip's join_lines: "except when
        # following comments"), even when it ends in a backslash
        ("# built on C:\\tools\\\nflask==3.0\n", {"flask": "==3.0"}),
        ("six \\\n# pinned \\\nflask==3.0\n", {"six": "*", "flask": "==3.0"}),
        # a backslash joins the next line as it is, with nothing put in its place
        ("numpy==1.26.\\\n4\n", {"numpy": "==1.26.4"}),
        ("numpy==1.26.4 \\\n    --hash=sha256:abc\n", {"numpy": "==1.26.4"}),
    ],
)
def test_requirements_txt_lines_are_joined_as_pip_joins_them(text, expected):
    dropped: list[str] = []
    assert parse_requirements_txt(text, dropped) == expected
    assert dropped == []


def test_requirements_txt_lines_pip_installs_from_a_local_path_are_paths_not_blame():
    # pip's own reading (req/constructors.py): a line holding a "/" is a local directory,
    # one naming an archive (pip's is_archive_file) a file, unless an "@" comes first; a
    # whole line that is an environment variable is filled where pip runs
    text = (
        "requests==2.31\nlibs/mylib\ndist/foo-1.0.tar.gz\nfoo-1.0-py3-none-any.whl\n"
        "libs/extra[dev]\nbar @ https://example.com/bar-1.0.whl\n${EXTRA_PACKAGE}\n"
    )
    dropped: list[str] = []
    assert parse_requirements_txt(text, dropped) == {
        "requests": "==2.31",
        "bar": "@ https://example.com/bar-1.0.whl",
    }
    assert dropped == ["'${EXTRA_PACKAGE}' is set where pip installs it, not in the file"]


def test_go_mod_indirect_is_goes_own_rule_not_the_word():
    """Go (modfile's isIndirect) marks a requirement indirect when its comment is
    `// indirect` or starts `// indirect;` — a note that mentions the word is no mark."""
    text = (
        "module m\nrequire (\n"
        "\ta.io/x v1.0.0 // TODO: was indirect before, now imported directly\n"
        "\tb.io/y v0.1.0 // indirect; kept for the test helpers\n"
        "\tc.io/z v0.2.0 //indirect\n"
        "\td.io/w v0.3.0 // indirect\n"
        ")\n"
        "require (\n\te.io/v v1.0.0 // x // indirect\n)\n"
    )
    assert parse_go_mod(text) == {"a.io/x": "v1.0.0", "e.io/v": "v1.0.0"}


def test_go_mod_a_third_slash_is_no_indirect_mark_in_a_block_of_indirect_ones():
    """``/// indirect``'s comment is ``/ indirect`` to Go, no mark: the line was read as
    direct in a block with direct lines, and as indirect in a block of indirect ones."""
    block = "require (\n\ta.io/x v1.0.0 /// indirect\n\tb.io/y v0.1.0 // indirect\n)\n"
    assert parse_go_mod("module m\n" + block) == {"a.io/x": "v1.0.0"}


def test_go_mod_skips_indirect_and_replace():
    text = (
        "module m\nrequire (\n a.io/x v1.0.0\n b.io/y v0.1.0 // indirect\n)\n"
        "replace a.io/x => ../x\n"
    )
    assert parse_go_mod(text) == {"a.io/x": "v1.0.0"}


def _go_mod_by_regex_scans(text: str) -> dict[str, str]:
    """parse_go_mod as it was written before it found directives with str.find and matched
    each line once: regex searches over the whole text, the reference it must agree with;
    a comment marks a requirement indirect by Go's rule (modfile's isIndirect: its words
    are ``indirect`` alone, or start with ``indirect;``)."""
    import re

    text = text.replace("\r\n", "\n")
    require = re.compile(r"^[ \t]*require\b[ \t]*", re.M)
    block_end = re.compile(r"^[ \t]*\)", re.M)
    entry = re.compile(r"^[ \t(]*\"?([^\s\"()]+)\"?[ \t]+(v[^\s/]+)[ \t]*(//[^\n]*)?$", re.M)
    requires: list[str] = []
    pos = 0
    while (found := require.search(text, pos)) is not None:
        start = found.end()
        if text.startswith("(", start):
            close = block_end.search(text, start + 1)
            if close is not None:
                requires.append(text[start + 1 : close.start()])
                pos = close.end()
                continue
        pos = text.find("\n", start)
        if pos < 0:
            pos = len(text)
        requires.append(text[start:pos])
    deps: dict[str, str] = {}
    for name, version, comment in entry.findall("\n".join(requires)):
        words = comment[2:].split() if comment else []
        if words == ["indirect"] or (len(words) > 1 and words[0] == "indirect;"):
            continue
        deps.setdefault(name, version)
    return deps


GO_MOD_PIECES = st.sampled_from(
    [
        "module m\n",
        "go 1.21\n",
        "require (\n",
        "require(",
        "require ( // c\n",
        "require a.io/x v1.0.0\n",
        "require a.io/x v1.0.0 // indirect",
        "requirement b.io/y v2\n",
        " \trequire ",
        "\ta.io/x v1.0.0\n",
        "\ta.io/x v1.2.0 // indirect\n",
        "\tb.io/y v0.1.0 // indirect\n",
        "\tb.io/y v0.1.0 // indirectly\n",
        "\tb.io/y v0.1.0 //indirect; x\n",
        "\tb.io/y v0.1.0 // TODO: was indirect before\n",
        "\tb.io/y v0.1.0 // indirect; now direct?\n",
        "\tb.io/y v0.1.0 // x // indirect\n",
        "\tb.io/y v0.1.0 /// indirect\n",
        "\tb.io/y v0.1.0 // indirect;\n",
        '\t"c.io/z" v3.0.0+incompatible\n',
        "\t(d.io/w v1\n",
        "\t// a comment (with parens)\n",
        ")\n",
        "\t)\n",
        ") require x.io/q v9\n",
        "replace a.io/x => ../x\n",
        "exclude (\n\tb.io/y v0.0.1\n)\n",
        "\r\n",
        "\n",
        "\r",
        "é",
        "require",
        "(",
        ")",
    ]
)


@settings(max_examples=1500, deadline=None)
@given(st.lists(GO_MOD_PIECES | st.text(" \t\n()/rvequi", max_size=5), max_size=30).map("".join))
def test_go_mod_reads_as_the_regex_scans_did(text):
    assert parse_go_mod(text) == _go_mod_by_regex_scans(text)


@pytest.mark.parametrize(
    "text",
    [
        "module m\n" + "x require" * 200_000 + "\n",  # 1.8 MB: took 34 s
        "module m\nrequire (\n" + "x)" * 400_000 + "\n)\n",  # 0.8 MB: took 11 s
    ],
)
def test_go_mod_of_one_long_line_is_read_in_time_proportional_to_it(text):
    # a go.mod under the 8 MiB bound, of one line holding many a "require" or ")": each
    # was walked back to the start of the line, a time growing with the line's square
    started = time.perf_counter()
    parse_go_mod(text)
    assert time.perf_counter() - started < 3


def test_go_mod_indirect_blocks_and_lines_read_again():
    text = (
        "module m\n\ngo 1.22\n\nrequire (\n\ta.io/x v1.0.0\n\tb.io/y v1.1.0 // pinned\n)\n\n"
        "require (\n\tc.io/z v0.1.0 // indirect\n\td.io/w v0.2.0 // indirect\n)\n"
        "require e.io/v v2.0.0 // indirect\nrequire f.io/u v3.0.0\n"
    )
    expected = {"a.io/x": "v1.0.0", "b.io/y": "v1.1.0", "f.io/u": "v3.0.0"}
    first = parse_go_mod(text)
    assert first == expected
    first["a.io/x"] = "v9.9.9"  # what a caller does with its result is its own
    assert parse_go_mod(text) == expected  # the lines matched before
    only_indirect = text.replace("d.io/w v0.2.0 // indirect", "d.io/w v0.3.0 // indirect")
    assert parse_go_mod(only_indirect) == expected  # the direct sections read before
    bumped = text.replace("c.io/z v0.1.0 // indirect", "c.io/z v0.1.0")
    assert parse_go_mod(bumped) == {**expected, "c.io/z": "v0.1.0"}


@pytest.mark.parametrize(
    "text, line",
    [
        ("module m\nrequire (\n\ta.io/x v1.0.0\n\x00\tb.io/y v1.1.0\n)\n", 4),
        ("module m\x00\nrequire a.io/x v1.0.0\n", 1),
        ("module m\nrequire (\n\ta.io/x v1.0.0\x0c\n)\n", 3),
        ("module m\r\nrequire a.io/x\x01 v1.0.0\r\n", 2),
    ],
)
def test_go_mod_with_a_character_go_refuses_is_unreadable_not_read_without_its_line(text, line):
    # Go's lexer (modfile's isIdent) stops at a rune neither printable nor a space it
    # skips: "unexpected input character"; the go command reads no requirement of it
    deps, problem = try_parse_manifest("svc/go.mod", text)
    assert deps == {}
    assert problem is not None and problem.startswith(f"line {line} holds ")


def test_go_mod_control_characters_in_a_comment_are_the_comments():
    text = "module m // built by\x00 a tool\nrequire a.io/x v1.0.0 // \x07\n"
    assert try_parse_manifest("go.mod", text) == ({"a.io/x": "v1.0.0"}, None)


@pytest.mark.parametrize(
    "char",
    ["\u200b", "\u00ad", "\ufeff", "\u2060", "\u3000", "\u2028", "\u202e"],
)
def test_go_mod_with_any_character_go_finds_unprintable_is_unreadable(char):
    # unicode.IsPrint (letters, marks, numbers, punctuation, symbols) is str.isprintable:
    # a zero-width space pasted into a path (a.io/x\u200b) was read as another module, and
    # an ideographic space between path and version as no requirement, so a.io/x was gone
    text = f"module m\nrequire (\n\ta.io/x{char} v1.0.0\n\tb.io/y{char}v1.1.0\n)\n"
    deps, problem = try_parse_manifest("go.mod", text)
    assert deps == {}
    assert problem == f"line 3 holds {char!r}, a character Go refuses"


def test_go_mod_printable_characters_of_any_script_and_any_in_a_comment_are_read():
    text = "module m // \u200b\u00ad\nrequire (\n\tcafé.io/ü v1.0.0 // 日本\u200b\n)\n"
    assert try_parse_manifest("go.mod", text) == ({"café.io/ü": "v1.0.0"}, None)


@pytest.mark.parametrize("char", ["\x00", "\x01", "\u200b"])
def test_go_mod_of_one_long_comment_of_refused_characters_is_read_in_linear_time(char):
    # each character in a comment was walked back to the start of its line: 2 MB of NULs
    # in one comment (under the 8 MiB bound) took minutes
    text = "module m\nrequire (\n\ta.io/x v1.0.0 // " + char * 2_000_000 + "\n)\n"
    started = time.perf_counter()
    assert parse_go_mod(text) == {"a.io/x": "v1.0.0"}
    assert time.perf_counter() - started < 3


def test_pyproject_development_groups_of_pdm_and_uv_are_dependencies_as_dependency_groups_are():
    # PDM (docs: tool.pdm.dev-dependencies, groups "similar to optional-dependencies",
    # editables with -e) and uv before PEP 735 (tool.uv.dev-dependencies, "merged into the
    # dev group"): pdm-project/pdm kept its test and doc tools there until 5d3779ff
    text = (
        '[project]\nname = "app"\ndependencies = ["requests>=2"]\n'
        "[tool.pdm.dev-dependencies]\n"
        'test = ["pytest-cov", "pytest-xdist>=1.31.0", "-e ./plugins/local", '
        '"-e git+https://github.com/pallets/click.git@main#egg=click"]\n'
        'doc = ["mkdocs>=1.1"]\n'
        '[tool.uv]\ndev-dependencies = ["ruff >=0.5.0,<0.6", "requests==2.0"]\n'
    )
    dropped: list[str] = []
    assert parse_pyproject(text, dropped) == {
        "requests": ">=2",
        "pytest-cov": "*",
        "pytest-xdist": ">=1.31.0",
        "mkdocs": ">=1.1",
        "ruff": ">=0.5.0,<0.6",
    }
    assert dropped == []


def test_pyproject_pdm_development_dependencies_of_pdm_0x_are_names_and_specs():
    # pdm-project/pdm's own file in 2020 (a532fe43): a name and its spec, as in a Pipfile;
    # the table is one of groups since PDM 1.5 (its changelog, #351)
    text = (
        '[tool.pdm.dev-dependencies]\npytest = "*"\ntowncrier = "<20.0.0,>=19.2.0"\n'
        'vendoring = {version = "*", marker = "python_version ~= \'3.8\'"}\n'
    )
    dropped: list[str] = []
    assert parse_pyproject(text, dropped) == {
        "pytest": "*",
        "towncrier": "<20.0.0,>=19.2.0",
        "vendoring": "*",
    }
    assert dropped == []


def test_pyproject_pdm_0x_reads_the_project_dependencies_with_its_development_ones():
    # PDM 0.x's Project.get_dependencies: [tool.pdm.dependencies] is the project's own,
    # [tool.pdm.<section>-dependencies] its other sections (pdm's doc-dependencies, at
    # a532fe43): the development tools were read and the dependencies they test were not
    text = (
        '[tool.pdm]\nname = "pdm"\n'
        '[tool.pdm.dependencies]\nclick = "*"\npip = ">=20.1,<21"\n'
        'importlib-metadata = {version = "*", marker = "python_version<\'3.8\'"}\n'
        '[tool.pdm.dev-dependencies]\npytest = "*"\nclick = ">=7"\n'
        '[tool.pdm.doc-dependencies]\nmkdocs = "<2.0.0,>=1.1"\n'
        '[tool.pdm.cli]\npdm = "pdm.core:main"\n'
    )
    dropped: list[str] = []
    assert parse_pyproject(text, dropped) == {
        "click": "*",
        "pip": ">=20.1,<21",
        "importlib-metadata": "*",
        "pytest": "*",
        "mkdocs": "<2.0.0,>=1.1",
    }
    assert dropped == []


@pytest.mark.parametrize(
    "text",
    [
        # psf/requests since 661970d1: its test group installs requests' own socks extra
        '[project]\nname = "requests"\ndependencies = ["urllib3>=1.21.1"]\n'
        '[project.optional-dependencies]\nsocks = ["PySocks>=1.5.6"]\n'
        '[dependency-groups]\ntest = ["requests[socks]", "pytest-cov"]\n',
        # the recursive extra PDM documents (all = ["foo[socks,jwt]"]), spelt another way
        '[project]\nname = "Requests"\ndependencies = ["urllib3>=1.21.1"]\n'
        '[project.optional-dependencies]\nsocks = ["PySocks>=1.5.6"]\nall = ["requests[socks]"]\n'
        '[tool.pdm.dev-dependencies]\ntest = ["pytest-cov"]\n',
        '[tool.poetry]\nname = "requests"\n[tool.poetry.dependencies]\nurllib3 = ">=1.21.1"\n'
        'PySocks = {version = ">=1.5.6", optional = true}\n'
        '[tool.poetry.group.test.dependencies]\npytest-cov = "*"\n'
        '[dependency-groups]\ntest = ["requests[socks]"]\n',
    ],
)
def test_a_pyproject_naming_its_own_project_installs_its_extras_and_names_no_dependency(text):
    assert parse_pyproject(text) == {
        "urllib3": ">=1.21.1",
        "pysocks": ">=1.5.6",
        "pytest-cov": "*",
    }


@pytest.mark.parametrize(
    "path, text, said",
    [
        # an array of tables where Cargo reads one ("invalid type: sequence, expected a map")
        ("Cargo.toml", '[[dependencies]]\nserde = "1"\n', "dependencies is an array"),
        ("Cargo.toml", "[target]\nunix = 3\n", "target.unix is a number"),
        (
            "Cargo.toml",
            '[target.unix]\ndependencies = ["libc"]\n',
            "target.unix.dependencies is an array",
        ),
        ("Cargo.toml", "[workspace]\ndependencies = 1\n", "workspace.dependencies is a number"),
        (
            "pyproject.toml",
            "[[tool.poetry.dependencies]]\n",
            "tool.poetry.dependencies is an array",
        ),
        ("pyproject.toml", "[tool.poetry]\ngroup = 1\n", "tool.poetry.group is a number"),
        ("pyproject.toml", "[tool.poetry.group]\ndev = []\n", "tool.poetry.group.dev is an array"),
        (
            "pyproject.toml",
            '[project]\noptional-dependencies = ["x"]\n',
            "project.optional-dependencies is an array",
        ),
        ("pyproject.toml", 'dependency-groups = ["pytest"]\n', "dependency-groups is an array"),
    ],
)
def test_a_dependency_table_of_another_type_is_said_not_passed_over_in_silence(path, text, said):
    dropped: list[str] = []
    assert try_parse_manifest(path, text, dropped) == ({}, None)
    assert dropped == [f"{said}, not a table"]


def test_package_json_optional_dependencies_override_the_same_name_in_dependencies():
    # npm's package.json docs: "Entries in optionalDependencies will override entries of
    # the same name in dependencies" (npm 7.0-7.5 wrote an optional one into both, npm/cli
    # #1886; a later bump of it changes the optional entry alone); a peer range still wins
    # over the package's own dev pin
    text = json.dumps(
        {
            "dependencies": {"fsevents": "^1.2.13", "chokidar": "^3.5.3"},
            "optionalDependencies": {"fsevents": "^2.3.2"},
            "peerDependencies": {"react": "^18.0.0"},
            "devDependencies": {"react": "18.2.0", "chokidar": "3.6.0"},
        }
    )
    assert try_parse_manifest("web/package.json", text) == (
        {"fsevents": "^2.3.2", "chokidar": "^3.5.3", "react": "^18.0.0"},
        None,
    )


def test_pom_without_namespace_and_with_managed_versions():
    text = (
        "<project><dependencyManagement><dependencies><dependency><groupId>g</groupId>"
        "<artifactId>a</artifactId><version>2.0</version></dependency></dependencies>"
        "</dependencyManagement><dependencies><dependency><groupId>g</groupId>"
        "<artifactId>a</artifactId></dependency></dependencies></project>"
    )
    assert parse_pom_xml(text) == {"g:a": "2.0"}


#: The notations of Gradle's "The version catalog TOML file format" (docs.gradle.org,
#: version_catalogs.html and rich_versions.html), in the shape android/nowinandroid's
#: gradle/libs.versions.toml writes them.
GRADLE_CATALOG = """\
[versions]
androidxCore = "1.15.0"
# AGP and tools should be updated together
androidGradlePlugin = "9.0.0"
commonsLang = { strictly = "[3.8, 4.0[", prefer = "3.9" }
slf4j = { require = "2.0.13" }

[libraries]
androidx-core-ktx = { group = "androidx.core", name = "core-ktx", version.ref = "androidxCore" }
androidx-compose-bom = { group = "androidx.compose", name = "compose-bom", version = "2025.09.01" }
androidx-compose-material3 = { group = "androidx.compose.material3", name = "material3" }
groovy-core = "org.codehaus.groovy:groovy:3.0.5"
groovy-json = { module = "org.codehaus.groovy:groovy-json", version = "3.0.5" }
commons-lang3 = { module = "org.apache.commons:commons-lang3", version.ref = "commonsLang" }
slf4j-api = { module = "org.slf4j:slf4j-api", version.ref = "slf4j" }
junit = "junit:junit"

[bundles]
groovy = ["groovy-core", "groovy-json"]

[plugins]
android-application = { id = "com.android.application", version.ref = "androidGradlePlugin" }
"""


def test_a_gradle_version_catalog_gives_each_library_at_its_version():
    dropped: list[str] = []
    assert parse_gradle_catalog(GRADLE_CATALOG, dropped) == {
        "androidx.core:core-ktx": "1.15.0",
        "androidx.compose:compose-bom": "2025.09.01",
        "androidx.compose.material3:material3": "*",  # (the BOM, a platform, gives it)
        "org.codehaus.groovy:groovy": "3.0.5",
        "org.codehaus.groovy:groovy-json": "3.0.5",
        "org.apache.commons:commons-lang3": "[3.8, 4.0[!!3.9",  # Gradle's own notation
        "org.slf4j:slf4j-api": "2.0.13",
        "junit:junit": "*",
    }
    assert dropped == []


def test_a_gradle_catalog_entry_gradle_would_refuse_is_said_and_the_others_read():
    dropped: list[str] = []
    text = (
        '[versions]\nkotlin = "2.0.0"\n[libraries]\n'
        'a = { module = "x:a", version.ref = "kotln" }\n'
        'b = "no-coordinates"\n'
        "c = 3\n"
        'd = { name = "only-a-name", version = "1" }\n'
        'e = { module = "x:e", version.ref = "kotlin" }\n'
    )
    assert parse_gradle_catalog(text, dropped) == {"x:e": "2.0.0"}
    assert dropped == [
        "library 'a': version.ref 'kotln' names no entry of [versions]",
        "library 'b': 'no-coordinates' is no group:name:version",
        "library 'c': a number is no library",
        "library 'd': no module, nor group and name",
    ]
    assert try_parse_manifest("gradle/libs.versions.toml", "[libraries\n")[1].startswith(
        "invalid TOML"
    )


def test_a_dotnet_project_gives_its_package_references():
    """The shapes of dotnet/eShop's projects (central versions: a reference with none) and of
    NuGet's docs (a Version attribute or element, VersionOverride, a property), with the
    byte order mark Visual Studio writes first."""
    text = (
        '\ufeff<Project Sdk="Microsoft.NET.Sdk.Web">\n'
        "  <PropertyGroup>\n    <TargetFramework>net10.0</TargetFramework>\n"
        "    <SerilogVersion>4.2.0</SerilogVersion>\n  </PropertyGroup>\n"
        "  <ItemGroup>\n"
        '    <Compile Include="..\\Shared\\ActivityExtensions.cs" />\n'
        '    <PackageReference Include="Asp.Versioning.Http" />\n'
        '    <PackageReference Include="Microsoft.EntityFrameworkCore.Tools">\n'
        "      <PrivateAssets>all</PrivateAssets>\n    </PackageReference>\n"
        '    <PackageReference Include="Newtonsoft.Json" Version="13.0.3" />\n'
        '    <PackageReference Include="Serilog" Version="$(SerilogVersion)" />\n'
        '    <PackageReference Include="Polly" VersionOverride="[8.0,9.0)" />\n'
        '    <PackageReference Include="xunit"><Version>2.9.2</Version></PackageReference>\n'
        '    <PackageReference Update="Newtonsoft.Json" Version="12.0.1" />\n'
        '    <ProjectReference Include="..\\EventBus\\EventBus.csproj" />\n'
        "  </ItemGroup>\n</Project>\n"
    )
    assert parse_msbuild_project(text) == {
        "Asp.Versioning.Http": "*",  # (Directory.Packages.props gives it)
        "Microsoft.EntityFrameworkCore.Tools": "*",
        "Newtonsoft.Json": "13.0.3",
        "Serilog": "4.2.0",
        "Polly": "[8.0,9.0)",
        "xunit": "2.9.2",
    }


def test_central_package_versions_and_packages_config_give_theirs():
    central = (
        "<Project>\n  <PropertyGroup>\n"
        "    <ManagePackageVersionsCentrally>true</ManagePackageVersionsCentrally>\n"
        "    <AspireVersion>13.1.0</AspireVersion>\n  </PropertyGroup>\n  <ItemGroup>\n"
        "    <!-- Version together with Aspire -->\n"
        '    <PackageVersion Include="Aspire.Npgsql" Version="$(AspireVersion)" />\n'
        '    <PackageVersion Include="Asp.Versioning.Http" Version="8.1.0" />\n'
        "  </ItemGroup>\n</Project>\n"
    )
    assert parse_central_packages(central) == {
        "Aspire.Npgsql": "13.1.0",
        "Asp.Versioning.Http": "8.1.0",
    }
    old_style = (
        '\ufeff<?xml version="1.0" encoding="utf-8"?>\n<packages>\n'
        '  <package id="Newtonsoft.Json" version="12.0.3" targetFramework="net472" />\n'
        '  <package id="System.Memory" version="4.5.0" targetFramework="net472" />\n'
        "</packages>\n"
    )
    assert parse_packages_config(old_style) == {
        "Newtonsoft.Json": "12.0.3",
        "System.Memory": "4.5.0",
    }
    assert try_parse_manifest("a/b.csproj", "<Project><ItemGroup>")[1].startswith("invalid XML")
    assert try_parse_manifest("packages.config", "<Project/>")[1] == (
        "packages.config root element is not <packages>"
    )


def test_composer_json_gives_require_then_require_dev():
    """laravel/laravel's composer.json, with a platform requirement (php) as Composer has it."""
    text = json.dumps(
        {
            "name": "laravel/laravel",
            "require": {"php": "^8.2", "laravel/framework": "^12.0"},
            "require-dev": {"phpunit/phpunit": "^11.5.50", "laravel/framework": "^11.0"},
            "autoload": {"psr-4": {"App\\": "app/"}},
        }
    )
    assert parse_composer_json(text) == {
        "php": "^8.2",
        "laravel/framework": "^12.0",
        "phpunit/phpunit": "^11.5.50",
    }
    assert try_parse_manifest("composer.json", "[]")[1] == "composer.json is not a JSON object"


def test_a_pipfile_gives_packages_then_dev_packages_by_pep_503_names():
    """pipenv's own Pipfile: strings, tables with a version and markers, a git dependency."""
    text = (
        '[[source]]\nurl = "https://pypi.org/simple"\nname = "pypi"\n\n'
        '[packages]\nDjango = "~=5.0"\nrequests = {git = "https://github.com/psf/requests.git"}\n'
        "\n[dev-packages]\n"
        'sphinx-click = "==4.*"\n'
        'stdeb = {version="*", sys_platform = "== \'linux\'"}\n'
        'myst-parser = {extras = ["linkify"], version = "3.*"}\n'
        "bad = 3\n"
    )
    dropped: list[str] = []
    assert parse_pipfile(text, dropped) == {
        "django": "~=5.0",
        "requests": "*",
        "sphinx-click": "==4.*",
        "stdeb": "*",
        "myst-parser": "3.*",
    }
    assert dropped == ["dev-packages.bad: a number is no version"]


def test_a_gemfile_lock_gives_the_gemfiles_own_requirements_not_the_locked_versions():
    """rubygems.org's Gemfile.lock, cut short: DEPENDENCIES is what the Gemfile requires
    (``!``: from git or a path); the specs sections hold every gem resolved, and versions."""
    text = (
        "GIT\n  remote: https://github.com/avo-hq/avo-advanced.git\n  specs:\n"
        "    avo-advanced (3.32.0)\n\n"
        "GEM\n  remote: https://rubygems.org/\n  specs:\n"
        "    actioncable (8.0.2)\n      actionpack (= 8.0.2)\n    rails (8.0.2)\n\n"
        "PLATFORMS\n  ruby\n  x86_64-linux\n\n"
        "DEPENDENCIES\n"
        "  avo-advanced (~> 3.32)!\n"
        "  bootsnap\n"
        "  pg (>= 0.18, < 2.0)\n"
        "  rails (~> 8.0.2)\n"
        "  tzinfo-data\n\n"
        "RUBY VERSION\n   ruby 3.4.1p0\n\nBUNDLED WITH\n   2.6.2\n"
    )
    assert parse_gemfile_lock(text) == {
        "avo-advanced": "~> 3.32",
        "bootsnap": "*",
        "pg": ">= 0.18, < 2.0",
        "rails": "~> 8.0.2",
        "tzinfo-data": "*",
    }
    assert try_parse_manifest("Gemfile.lock", "")[1] == "Gemfile.lock with no section"


def test_a_pubspec_gives_dependencies_then_dev_dependencies_as_written():
    """flutter/gallery's pubspec.yaml, cut short: SDK packages and ``any`` are ``*``; a
    version is the text written, ``1.10`` no number to round to 1.1."""
    text = (
        "name: gallery\nversion: 2.10.2+021002 # See README.md\n\n"
        "environment:\n  flutter: ^3.13.0\n  sdk: ^3.1.0\n\n"
        "dependencies:\n  flutter:\n    sdk: flutter\n"
        "  animations: ^2.0.2\n"
        '  flutter_staggered_grid_view: ">=0.6.1 <0.8.0"\n'
        "  intl: any # An exact version pin will be provided by the Flutter SDK\n"
        "  vector_math: 1.10\n"
        "  shrine_images:\n    hosted: https://pub.dev\n    version: ^2.0.1\n"
        "  local_pkg:\n    path: ../local_pkg\n"
        "  bare:\n\n"
        "dev_dependencies:\n  flutter_test:\n    sdk: flutter\n  test: ^1.21.1\n"
        "  broken:\n    - 1.0\n"
    )
    dropped: list[str] = []
    assert parse_pubspec(text, dropped) == {
        "flutter": "*",
        "animations": "^2.0.2",
        "flutter_staggered_grid_view": ">=0.6.1 <0.8.0",
        "intl": "*",
        "vector_math": "1.10",
        "shrine_images": "^2.0.1",
        "local_pkg": "*",
        "bare": "*",
        "flutter_test": "*",
        "test": "^1.21.1",
    }
    assert dropped == ["dev_dependencies.broken: an array is no version"]
    assert try_parse_manifest("pubspec.yaml", "dependencies: [\n")[1].startswith("invalid YAML")


def test_unreadable_manifests_are_reported_not_raised():
    assert try_parse_manifest("a/pom.xml", "<!DOCTYPE x [<!ENTITY e 'x'>]><project/>")[1]
    assert try_parse_manifest("Cargo.toml", "[dependencies\n")[1].startswith("invalid TOML")
    assert try_parse_manifest("package.json", "[1, 2]")[1]


@settings(max_examples=500, deadline=None)
@given(
    st.lists(st.sampled_from(["", "a", "svc", ".github", "docs", "é", "requirements"]), max_size=3),
    st.sampled_from(
        [
            "go.mod",
            "package.json",
            "pyproject.toml",
            "Cargo.toml",
            "pom.xml",
            "requirements.txt",
            "requirements-dev.txt",
            "requirements",
            "CODEOWNERS",
            "main.go",
            "go.sum",
        ]
    )
    | st.text(max_size=12),
)
def test_every_edit_the_git_source_reads_is_kept_by_the_log_filter(dirs, name):
    from healthd.sources._codeowners import LOCATIONS
    from healthd.sources._manifests import manifest_parser

    path = "/".join([*dirs, name])
    if manifest_parser(path) is not None or path in LOCATIONS:
        assert edit_matters(path.encode("utf-8", "surrogateescape"))


def test_languages_and_the_main_one():
    assert language_of("svc/main.go") == "go"
    assert language_of("svc/node_modules/x/index.js") is None
    assert main_language({"go": 3, "javascript": 3, "python": 1}) == "go"
    assert main_language({}) is None


@pytest.mark.parametrize(
    ("where", "counts", "language"),
    [
        # (their files at 2026's heads; the language GitHub Linguist gives each directory)
        ("AFNetworking/AFNetworking", {"c header": 8, "objective-c": 6}, "objective-c"),
        ("esphome/esphome/core", {"c header": 24, "cpp": 14}, "cpp"),
        ("NVIDIA/warp/native", {"c header": 106, "cpp": 23}, "cpp"),
        ("redis/deps/hiredis", {"c header": 27, "c": 26, "cpp": 1}, "c"),
        ("a directory of headers alone", {"c header": 15}, "c"),
        ("headers beside Python", {"c header": 3, "python": 2}, "c"),
    ],
)
def test_a_c_header_counts_as_its_modules_c_family_language(where, counts, language):
    """A `.h` file was always C: AFNetworking's own directory (8 headers, 6 .m files) read
    as C, esphome's C++ components too."""
    assert language_of(f"{where}/x.h") == "c header"
    assert main_language(counts) == language


MANIFEST_PATHS = [
    "pyproject.toml",
    "requirements.txt",
    "requirements-dev.txt",
    "package.json",
    "go.mod",
    "Cargo.toml",
    "pom.xml",
]
FRAGMENTS = st.sampled_from(
    [
        "[project]\n",
        "dependencies = [",
        '"requests>=2"',
        "]\n",
        "[tool.poetry.dependencies]\n",
        'x = { version = "1" }\n',
        "[dependencies]\n",
        'serde = "1.0"\n',
        "{",
        "}",
        '"',
        ":",
        ",",
        "[",
        "]",
        "require (\n",
        ")\n",
        "a.io/x v1.0.0 // indirect\n",
        "<project>",
        "</project>",
        "<dependencies>",
        "<dependency>",
        "<groupId>g</groupId>",
        "<artifactId>a</artifactId>",
        "<version>${v}</version>",
        "\\\n",
        "# c\n",
        "-r x\n",
        "pkg==1; python_version<'3'\n",
        '"dependencies": {"a": "1"}',
        "\x00",
        "é",
        "\n",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MANIFEST_PATHS), st.text())
def test_any_text_in_any_manifest_never_raises(path, text):
    deps, problem = try_parse_manifest(path, text)
    assert problem is None or deps == {}
    assert all(
        isinstance(k, str) and k.strip() and isinstance(v, str) and v.strip()
        for k, v in deps.items()
    )


@settings(max_examples=400, deadline=None)
@given(
    st.sampled_from(MANIFEST_PATHS),
    st.lists(FRAGMENTS | st.text(max_size=6), max_size=40).map("".join),
)
def test_manifest_like_text_never_raises(path, text):
    deps, _ = try_parse_manifest(path, text)
    assert all(isinstance(v, str) for v in deps.values())


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_as_codeowners_never_raises(text):
    rules = parse_codeowners(text)
    for pattern, owners in rules.items():
        assert pattern.strip() and owners.strip()
        assert owners.split(" ") == sorted(owners.split(" "))


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["*", "/a/", "@x", "@o/t", "e@x.io", " ", "\t", "#", "\\", "[S]", "^[O]", "\n"]
        )
        | st.text(max_size=5),
        max_size=40,
    ).map("".join)
)
def test_codeowners_like_text_never_raises(text):
    parse_codeowners(text)


@pytest.mark.parametrize("path", [".", "./", ""])
def test_cargo_toml_crate_naming_itself_for_its_own_features_is_no_dependency(path):
    # rust-analyzer's crates/cfg (695bee97) and uv's crates/uv-preview (46 versions): the
    # crate in its own dev-dependencies turns on its features for its tests, as requests'
    # requests[socks] does; a registry crate of the same name (the semver trick) is one
    text = (
        '[package]\nname = "cfg"\n[dependencies]\ntt = { path = "../tt" }\n'
        f'[dev-dependencies]\ncfg = {{ path = "{path}", default-features = false }}\n'
        'cfg01 = { package = "cfg", version = "0.1" }\n'
    )
    assert parse_cargo_toml(text) == {"tt": "path+../tt", "cfg": "0.1"}
