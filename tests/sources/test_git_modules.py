"""The `git` source's modules: a directory holding a manifest is a module, wherever it is,
and vendored or documentation trees are none (issue 10, points 1 and 2)."""

from __future__ import annotations

import json

import pytest

from healthd.model import FactKey
from healthd.sources import build_source
from healthd.timeline import dumps_event
from healthd.truth import GroundTruth


def pull(repo, **options):
    source = build_source(
        "git",
        "repo",
        {"path": str(repo.path), "revalidate_clock": "head", "revalidate_interval": "P3650D"}
        | options,
    )
    result = source.pull(None)
    assert result.error is None, result.error
    return result


def go_mod(module: str, **requires: str) -> str:
    body = "".join(f"\t{name} {version}\n" for name, version in requires.items())
    return f"module example.com/{module}\n\ngo 1.22\n\nrequire (\n{body})\n"


def test_modules_in_one_folder_are_separate_subjects_with_independent_bumps(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "components/a/go.mod": go_mod("a", **{"github.com/x/zap": "v1.0.0"}),
            "components/a/main.go": "package main",
            "components/b/go.mod": go_mod("b", **{"github.com/x/zap": "v1.5.0"}),
            "components/b/main.go": "package main",
            "components/README.md": "# components",
        },
    )
    repo.commit(
        "2024-02-01", {"components/a/go.mod": go_mod("a", **{"github.com/x/zap": "v1.1.0"})}
    )
    repo.commit(
        "2024-03-01", {"components/b/go.mod": go_mod("b", **{"github.com/x/zap": "v1.6.0"})}
    )

    events = pull(repo).events

    assert brief(events) == [
        ("2024-01-01", "added", "components/a exists=true"),
        ("2024-01-01", "added", "components/b exists=true"),
        ("2024-01-01", "added", "components/a dependency:github.com/x/zap=v1.0.0"),
        ("2024-01-01", "added", "components/b dependency:github.com/x/zap=v1.5.0"),
        ("2024-01-01", "added", "components/a language=go"),
        ("2024-01-01", "added", "components/b language=go"),
        (
            "2024-02-01",
            "revised",
            "components/a dependency:github.com/x/zap=v1.0.0 -> "
            "components/a dependency:github.com/x/zap=v1.1.0",
        ),
        (
            "2024-03-01",
            "revised",
            "components/b dependency:github.com/x/zap=v1.5.0 -> "
            "components/b dependency:github.com/x/zap=v1.6.0",
        ),
    ]
    dep = [ev for ev in events if ev.fact.subject == "components/b" and "zap" in ev.fact.predicate]
    assert dep[0].depends_on == (FactKey("components/b", "exists"),)
    truth = GroundTruth(events)
    at_head = events[-1].timestamp
    key_a = FactKey("components/a", "dependency:github.com/x/zap")
    key_b = FactKey("components/b", "dependency:github.com/x/zap")
    assert [f.value for f in truth.current(key_a, at_head)] == ["v1.1.0"]
    assert [f.value for f in truth.current(key_b, at_head)] == ["v1.6.0"]


def test_a_nested_manifest_makes_a_nested_module_and_takes_its_files(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "web/package.json": '{"dependencies": {"react": "18.2.0"}}',
            "web/index.ts": "",
            "web/ui/button/index.js": "",
            "web/ui/button/style.js": "",
        },
    )
    repo.commit(
        "2024-02-01", {"web/ui/button/package.json": '{"dependencies": {"react": "17.0.0"}}'}
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "web exists=true"),
        ("2024-01-01", "added", "web dependency:react=18.2.0"),
        ("2024-01-01", "added", "web language=javascript"),
        ("2024-02-01", "added", "web/ui/button exists=true"),
        ("2024-02-01", "added", "web/ui/button dependency:react=17.0.0"),
        ("2024-02-01", "revised", "web language=javascript -> web language=typescript"),
        ("2024-02-01", "added", "web/ui/button language=javascript"),
    ]


def test_vendored_documentation_and_adr_trees_are_not_modules(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            ".adr-dir": "architecture/decisions\n",
            "architecture/decisions/0001-record.md": "# 1. Record\n",
            "architecture/decisions/toc.js": "",
            "api/go.mod": go_mod("api", **{"github.com/x/zap": "v1.0.0"}),
            "api/main.go": "package main",
            "api/vendor/github.com/x/zap/go.mod": go_mod("zap"),
            "api/vendor/github.com/x/zap/zap.go": "package zap",
            "vendor/lib/a.c": "",
            "Godeps/Godeps.json": "{}",
            "third_party/proto/package.json": '{"dependencies": {"protobufjs": "7.0.0"}}',
            "node_modules/left-pad/package.json": '{"dependencies": {}}',
            "docs/site/package.json": '{"dependencies": {"docusaurus": "3.0.0"}}',
            "docs/site/index.js": "",
        },
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "api exists=true"),
        ("2024-01-01", "added", "api dependency:github.com/x/zap=v1.0.0"),
        ("2024-01-01", "added", "api language=go"),
    ]


def test_a_docs_app_below_the_root_is_a_module_as_turborepos_starter_makes_one(repo, brief):
    """create-turbo's starter (vercel/turborepo examples/basic, copied by thousands of
    repositories) has a Next.js app in apps/docs beside apps/web; it was no module, since
    `docs` matched at any depth. GitHub Linguist's documentation.yml knows `docs/` at the
    root alone (``^[Dd]ocs?/``); a root docs/ tree is still none."""
    next_app = '{"name": "%s", "dependencies": {"next": "^15.0.0", "ui": "workspace:*"}}'
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"name": "my-turborepo", "private": true}',
            "pnpm-workspace.yaml": 'packages:\n  - "apps/*"\n  - "packages/*"\n',
            "apps/docs/package.json": next_app % "docs",
            "apps/docs/app/page.tsx": "",
            "apps/web/package.json": next_app % "web",
            "apps/web/app/page.tsx": "",
            "packages/ui/package.json": '{"name": "ui", "devDependencies": {"react": "^19"}}',
            "packages/ui/src/button.tsx": "",
            "docs/site/package.json": '{"dependencies": {"docusaurus": "3.0.0"}}',
            "docs/site/index.js": "",
        },
    )
    assert {what for _, _, what in brief(pull(repo).events)} == {
        "apps/docs exists=true",
        "apps/docs dependency:next=^15.0.0",
        "apps/docs dependency:ui=workspace:*",
        "apps/docs language=typescript",
        "apps/web exists=true",
        "apps/web dependency:next=^15.0.0",
        "apps/web dependency:ui=workspace:*",
        "apps/web language=typescript",
        "packages/ui exists=true",
        "packages/ui dependency:react=^19",
        "packages/ui language=typescript",
    }


def test_tool_configuration_scripts_do_not_outvote_a_modules_own_source(repo, brief):
    """create-turbo's apps/web is two .tsx pages and two configuration scripts,
    eslint.config.js and next.config.js (00xSam/monorepo, 000-KunalPal/turborepo-saas-template
    as they are): counted file for file, a tie that JavaScript won by its name, where GitHub
    Linguist, counting bytes, says TypeScript. A configuration script (``*.config.js``, a
    dotfile such as ``.eslintrc.cjs``) counts only in a module with no other source."""
    repo.commit(
        "2024-01-01",
        {
            "pnpm-workspace.yaml": 'packages:\n  - "apps/*"\n  - "packages/*"\n',
            "package.json": '{"name": "my-turborepo", "private": true}',
            "apps/web/package.json": '{"name": "web", "dependencies": {"next": "^15"}}',
            "apps/web/app/layout.tsx": "",
            "apps/web/app/page.tsx": "",
            "apps/web/eslint.config.js": "",
            "apps/web/next.config.js": "",
            "apps/web/.eslintrc.cjs": "",
            "packages/tailwind-config/package.json": '{"name": "tailwind-config"}',
            "packages/tailwind-config/tailwind.config.js": "",
            "packages/eslint-config/package.json": '{"name": "eslint-config"}',
            "packages/eslint-config/next.js": "",
            "packages/eslint-config/vitest.config.ts": "",
            "jobs/build.gradle.kts": "",  # (Gradle's Kotlin script, a Scala subproject's)
            "jobs/src/main/scala/Job.scala": "",
        },
    )
    languages = {what for _, _, what in brief(pull(repo).events) if "language=" in what}
    assert languages == {
        "apps/web language=typescript",
        "packages/tailwind-config language=javascript",
        "packages/eslint-config language=javascript",
        "jobs language=scala",
    }


def test_gradle_subprojects_are_modules_and_the_version_catalog_is_the_roots(repo, brief):
    """android/nowinandroid's layout: a build script per subproject (core/data,
    feature/foryou/impl) and gradle/libs.versions.toml for the whole build. Each subproject
    was folded into its top-level directory (one `core` module for fifteen), `gradle/` (the
    wrapper) was a module, and no dependency was read."""
    kt = "package com.google.samples.apps.nowinandroid\n"
    catalog = (
        '[versions]\nandroidxCore = "1.15.0"\n[libraries]\n'
        'androidx-core-ktx = { group = "androidx.core", name = "core-ktx", '
        'version.ref = "androidxCore" }\n'
    )
    repo.commit(
        "2024-01-01",
        {
            "settings.gradle.kts": 'include(":app")\ninclude(":core:data")\n',
            "build.gradle.kts": "plugins {\n    alias(libs.plugins.android.application) apply false\n}\n",
            "gradle/libs.versions.toml": catalog,
            "gradle/wrapper/gradle-wrapper.properties": "distributionUrl=gradle-8.9-bin.zip\n",
            "app/build.gradle.kts": "dependencies {\n    implementation(libs.androidx.core.ktx)\n}\n",
            "app/src/main/kotlin/MainActivity.kt": kt,
            "core/data/build.gradle.kts": "plugins {\n    alias(libs.plugins.nowinandroid.android.library)\n}\n",
            "core/data/src/main/kotlin/TopicsRepository.kt": kt,
            "feature/foryou/impl/build.gradle": "apply plugin: 'com.android.library'\n",
            "feature/foryou/impl/src/main/java/ForYouScreen.java": "",
        },
    )
    repo.commit("2024-02-01", {"gradle/libs.versions.toml": catalog.replace("1.15.0", "1.16.0")})
    repo.commit("2024-03-01", {"app/build.gradle.kts": "dependencies {}\n"})  # (nothing read)
    assert brief(pull(repo).events) == [
        ("2024-01-01", "added", "app exists=true"),
        ("2024-01-01", "added", "core/data exists=true"),
        ("2024-01-01", "added", "feature/foryou/impl exists=true"),
        ("2024-01-01", "added", ". dependency:androidx.core:core-ktx=1.15.0"),
        ("2024-01-01", "added", "app language=kotlin"),
        ("2024-01-01", "added", "core/data language=kotlin"),
        ("2024-01-01", "added", "feature/foryou/impl language=java"),
        (
            "2024-02-01",
            "revised",
            ". dependency:androidx.core:core-ktx=1.15.0 -> . dependency:androidx.core:core-ktx=1.16.0",
        ),
    ]


def test_dotnet_projects_are_modules_and_central_versions_are_the_roots(repo, brief):
    """dotnet/eShop's layout: a project file per service under src/ and the versions in
    Directory.Packages.props at the root. It was one module, `src`, with no dependency."""
    repo.commit(
        "2024-01-01",
        {
            "Directory.Packages.props": (
                '<Project><ItemGroup><PackageVersion Include="Pgvector" Version="0.3.0" />'
                "</ItemGroup></Project>"
            ),
            "eShop.slnx": "<Solution />",
            "src/Catalog.API/Catalog.API.csproj": (
                '<Project Sdk="Microsoft.NET.Sdk.Web"><ItemGroup>'
                '<PackageReference Include="Pgvector" /></ItemGroup></Project>'
            ),
            "src/Catalog.API/Program.cs": "",
            "src/Basket.API/Basket.API.csproj": '<Project Sdk="Microsoft.NET.Sdk.Web" />',
            "src/Basket.API/Program.cs": "",
        },
    )
    assert brief(pull(repo).events) == [
        ("2024-01-01", "added", "src/Basket.API exists=true"),
        ("2024-01-01", "added", "src/Catalog.API exists=true"),
        ("2024-01-01", "added", ". dependency:Pgvector=0.3.0"),
        ("2024-01-01", "added", "src/Catalog.API dependency:Pgvector=*"),
        ("2024-01-01", "added", "src/Basket.API language=csharp"),
        ("2024-01-01", "added", "src/Catalog.API language=csharp"),
    ]


def test_a_root_pipfile_lists_what_to_install_as_requirements_do_and_keeps_the_modules(repo, brief):
    """A Django project's Pipfile at the root: its packages are the root's, and its apps,
    top-level directories, stay modules (as with a requirements.txt)."""
    repo.commit(
        "2024-01-01",
        {
            "Pipfile": '[packages]\nDjango = "~=5.0"\n',
            "blog/models.py": "",
            "accounts/views.py": "",
        },
    )
    assert brief(pull(repo).events) == [
        ("2024-01-01", "added", "accounts exists=true"),
        ("2024-01-01", "added", "blog exists=true"),
        ("2024-01-01", "added", ". dependency:django=~=5.0"),
        ("2024-01-01", "added", "accounts language=python"),
        ("2024-01-01", "added", "blog language=python"),
    ]


def test_a_directory_name_written_with_a_leading_slash_is_excluded_at_the_root_alone(repo):
    repo.commit(
        "2024-01-01",
        {
            "build/tools/go.mod": go_mod("tools"),
            "build/tools/main.go": "package main",
            "cmd/build/go.mod": go_mod("cmd"),
            "cmd/build/main.go": "package main",
        },
    )
    subjects = {ev.fact.subject for ev in pull(repo, exclude_dirs=["/build"]).events}
    assert subjects == {"cmd/build"}


def test_go_test_fixtures_under_testdata_are_not_modules(repo, brief):
    """The go tool ignores directories named testdata (`go help packages`): the go.mod
    files of fixtures there (hashicorp/go-plugin's internal/cmdrunner/testdata, a linter's
    testdata/src) are no modules of the repository, and their files no module's."""
    repo.commit(
        "2024-01-01",
        {
            "go.mod": go_mod("plugin", **{"github.com/x/zap": "v1.0.0"}),
            "client.go": "package plugin",
            "internal/cmdrunner/cmd_runner.go": "package cmdrunner",
            "internal/cmdrunner/testdata/go.mod": go_mod("fixture"),
            "internal/cmdrunner/testdata/main.go": "package main",
            "tools/go.mod": go_mod("tools", **{"github.com/x/lint": "v0.1.0"}),
            "tools/tools.go": "package tools",
            "tools/testdata/src/go.mod": go_mod("src", **{"github.com/x/toml": "v1.0.0"}),
            "tools/testdata/src/a/a.py": "",
            "tools/testdata/src/b/b.py": "",
        },
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "tools exists=true"),
        ("2024-01-01", "added", ". dependency:github.com/x/zap=v1.0.0"),
        ("2024-01-01", "added", "tools dependency:github.com/x/lint=v0.1.0"),
        ("2024-01-01", "added", "tools language=go"),
    ]


def test_test_fixture_projects_are_not_modules(repo, brief):
    """The package.json files of test fixtures (eslint's tests/fixtures holds 24, a Jest
    project's __fixtures__ more) describe fake projects, not the repository's packages,
    which are eslint's npm workspaces (packages/*)."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"workspaces": ["packages/*"], "dependencies": {"ajv": "6.12.4"}}',
            "lib/linter.js": "",
            "packages/js/package.json": '{"name": "@eslint/js"}',
            "packages/js/src/index.js": "",
            "tests/fixtures/packagejson/package.json": '{"eslintConfig": {}}',
            "tests/fixtures/packagejson/a.js": "",
            "tests/lib/linter.js": "",
            "packages/js/src/__fixtures__/app/package.json": '{"dependencies": {"vue": "3.0.0"}}',
            "packages/js/src/__fixtures__/app/App.vue": "",
        },
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "packages/js exists=true"),
        ("2024-01-01", "added", ". dependency:ajv=6.12.4"),
        ("2024-01-01", "added", "packages/js language=javascript"),
    ]


def test_with_workspaces_declared_only_a_workspace_package_json_makes_a_module(repo, brief):
    """vite's root declares its workspaces (npm's `workspaces`, then pnpm-workspace.yaml,
    which pnpm reads instead): create-vite's template-react is a template it copies, not a
    package of the repository (its files are create-vite's), and playground/hmr is one only
    while pnpm's file says so (before, its files are the root package's)."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"private": true, "workspaces": ["packages/*"]}',
            "packages/vite/package.json": '{"name": "vite"}',
            "packages/vite/src/node/server.ts": "",
            "packages/create-vite/package.json": '{"name": "create-vite"}',
            "packages/create-vite/src/index.ts": "",
            "packages/create-vite/src/prompts.ts": "",
            "packages/create-vite/src/files.ts": "",
            "packages/create-vite/template-react/package.json": '{"name": "vite-react"}',
            "packages/create-vite/template-react/src/App.jsx": "",
            "packages/create-vite/template-react/src/main.jsx": "",
            "playground/hmr/package.json": '{"name": "@vitejs/test-hmr"}',
            "playground/hmr/hmr.js": "",
        },
    )
    repo.commit(
        "2024-02-01",
        {"pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n  - 'playground/**'\n"},
    )
    first = pull(repo)
    repo.commit(
        "2024-03-01",
        {
            "packages/create-vite/template-vue/package.json": '{"name": "vite-vue"}',
            "packages/create-vite/template-vue/src/App.vue": "",
        },
    )
    repo.commit("2024-04-01", {"pnpm-workspace.yaml": "packages:\n  - 'packages/*'\n"})
    events = pull(repo).events
    rest = build_source("git", "repo", {"path": str(repo.path)}).pull(first.cursor).events
    assert [ev.id for ev in first.events + rest if ev.type != "revalidated"] == [
        ev.id for ev in events
    ]
    assert brief(events) == [
        ("2024-01-01", "added", "packages/create-vite exists=true"),
        ("2024-01-01", "added", "packages/vite exists=true"),
        ("2024-01-01", "added", "packages/create-vite language=typescript"),
        ("2024-01-01", "added", "packages/vite language=typescript"),
        ("2024-02-01", "added", "playground/hmr exists=true"),
        ("2024-02-01", "added", "playground/hmr language=javascript"),
        ("2024-04-01", "invalidated", "playground/hmr exists=true"),
    ]


def test_lerna_packages_name_the_workspaces_when_the_package_manager_is_given_none(repo, brief):
    """lerna/lerna's own layout, 2018 to 2020: lerna.json's `packages` (commands/*, core/*,
    utils/*) and no `workspaces` in package.json, so what `lerna bootstrap` linked were its
    packages, and helpers/* (private test helpers, each with a package.json) were none.
    Under `useWorkspaces` (Lerna 3 to 6) the package manager's workspaces name them, and
    lerna.json's globs are not read."""
    lerna = '{"packages": ["commands/*", "core/*", "utils/*"], "version": "3.22.1"}'
    repo.commit(
        "2020-01-01",
        {
            "lerna.json": lerna,
            "package.json": '{"name": "root", "private": true}',
            "commands/add/package.json": '{"name": "@lerna/add"}',
            "commands/add/index.js": "",
            "helpers/cli-runner/package.json": '{"name": "@lerna-test/cli-runner"}',
            "helpers/cli-runner/index.js": "",
        },
    )
    first = pull(repo)
    repo.commit(
        "2021-01-01",
        {"lerna.json": lerna.replace('"version"', '"useWorkspaces": true, "version"')},
    )
    events = pull(repo).events
    rest = build_source("git", "repo", {"path": str(repo.path)}).pull(first.cursor).events
    assert [ev.id for ev in first.events + rest if ev.type != "revalidated"] == [
        ev.id for ev in events
    ]
    assert [line for line in brief(events) if "exists" in line[2]] == [
        ("2020-01-01", "added", "commands/add exists=true"),
        ("2021-01-01", "added", "helpers/cli-runner exists=true"),
    ]


def test_a_deep_tree_under_workspace_globs_of_many_stars_is_read_at_once(repo, brief):
    """Hostile input: each ``**`` of a glob may take any number of a path's components, and
    trying every split of a 300-deep path among four takes hours; it is read in a second."""
    import time

    deep = "/".join(["d"] * 300)
    repo.commit(
        "2024-01-01",
        {
            "pnpm-workspace.yaml": "packages:\n  - '**/**/**/**/leaf'\n",
            "package.json": "{}",
            f"{deep}/stem/package.json": "{}",
            f"{deep}/stem/index.js": "",
            "d/leaf/package.json": "{}",
            "d/leaf/index.js": "",
        },
    )
    started = time.monotonic()
    events = pull(repo).events
    assert time.monotonic() - started < 20
    assert brief(events) == [
        ("2024-01-01", "added", "d/leaf exists=true"),
        ("2024-01-01", "added", "d/leaf language=javascript"),
    ]


def test_documentation_trees_in_any_case_are_not_modules(repo, brief):
    """Linguist's documentation.yml: Docs/ and Documentation/ hold documentation, as docs/
    does (a TYPO3 extension's Documentation/ holds Sphinx's conf.py, the Linux kernel's its
    scripts; neither is a Python module)."""
    repo.commit(
        "2024-01-01",
        {
            "Classes/Controller/ForumController.php": "<?php\n",
            "Documentation/conf.py": "",
            "Documentation/Index.rst": "",
            "Docs/build.sh": "",
            "tools/Documentation/gen.py": "",
            "tools/lint.py": "",
        },
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "Classes exists=true"),
        ("2024-01-01", "added", "tools exists=true"),
        ("2024-01-01", "added", "Classes language=php"),
        ("2024-01-01", "added", "tools language=python"),
    ]


def test_vendored_trees_named_as_linguist_knows_them_are_not_modules(repo, brief):
    """Linguist's vendor.yml: redis's deps/ (jemalloc, lua, hiredis), Godot's thirdparty/,
    OpenCV's 3rdparty/, an app's vendors/ and Carthage/ hold other projects' code."""
    repo.commit(
        "2024-01-01",
        {
            "src/server.c": "",
            "deps/lua/src/lapi.c": "",
            "deps/hiredis/hiredis.c": "",
            "thirdparty/zstd/zstd.c": "",
            "modules/3rdparty/protobuf/setup.py": "",
            "modules/3rdparty/protobuf/requirements.txt": "six\n",
            "modules/core/src/core.cpp": "",
            "web/vendors/chart/chart.js": "",
            "web/app.ts": "",
            "ios/Carthage/Checkouts/Alamofire/Source/Alamofire.swift": "",
            "ios/App/AppDelegate.swift": "",
            "ios/ThirdParty/SDWebImage/SDImageCache.m": "",
        },
    )
    events = pull(repo).events
    assert [what for _, _, what in brief(events)] == [
        "ios exists=true",
        "modules exists=true",
        "src exists=true",
        "web exists=true",
        "ios language=swift",
        "modules language=cpp",
        "src language=c",
        "web language=typescript",
    ]


def test_excluded_directories_are_overridable(repo):
    repo.commit("2024-01-01", {"docs/site/package.json": '{"dependencies": {"vite": "5.0.0"}}'})
    events = pull(repo, exclude_dirs=["vendor"]).events
    assert {(ev.fact.subject, ev.fact.predicate) for ev in events} == {
        ("docs/site", "exists"),
        ("docs/site", "dependency:vite"),
    }


def test_a_module_whose_manifest_goes_is_no_longer_a_module(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "libs/a/Cargo.toml": '[package]\nname = "a"\n[dependencies]\nserde = "1"\n',
            "libs/a/src/lib.rs": "",
            "libs/b/Cargo.toml": '[package]\nname = "b"\n',
        },
    )
    repo.commit("2024-02-01", {"libs/a/Cargo.toml": None})
    events = pull(repo).events
    assert brief(events)[-1:] == [("2024-02-01", "invalidated", "libs/a exists=true")]
    assert ("2024-02-01", "added", "libs exists=true") not in brief(events)


def test_with_a_root_manifest_plain_directories_belong_to_the_root_module(repo, brief):
    repo.commit(
        "2024-01-01",
        {
            "go.mod": go_mod("otel", **{"github.com/x/zap": "v1.0.0"}),
            "attribute/set.go": "package attribute",
            "sdk/go.mod": go_mod("sdk"),
            "sdk/trace.go": "package sdk",
        },
    )
    events = pull(repo).events
    assert brief(events) == [
        ("2024-01-01", "added", "sdk exists=true"),
        ("2024-01-01", "added", ". dependency:github.com/x/zap=v1.0.0"),
        ("2024-01-01", "added", "sdk language=go"),
    ]


def test_a_root_requirements_file_lists_dependencies_and_takes_no_modules(repo, brief):
    """ARM's SCP-firmware, a C project, added a requirements.txt of lint tools at its root:
    its modules (framework, module, ...) were still there. A requirements file lists what to
    install (pip's docs), it declares no project holding the directories beside it."""
    repo.commit(
        "2018-06-08",
        {
            "framework/src/fwk_module.c": "",
            "module/scmi/src/mod_scmi.c": "",
            "tools/check_style.py": "",
        },
    )
    repo.commit("2020-06-02", {"requirements.txt": "pycodestyle==2.6.0\n"})
    repo.commit("2021-01-04", {"pyproject.toml": '[project]\nname = "scp"\n'})
    events = pull(repo).events
    assert brief(events) == [
        ("2018-06-08", "added", "framework exists=true"),
        ("2018-06-08", "added", "module exists=true"),
        ("2018-06-08", "added", "tools exists=true"),
        ("2018-06-08", "added", "framework language=c"),
        ("2018-06-08", "added", "module language=c"),
        ("2018-06-08", "added", "tools language=python"),
        ("2020-06-02", "added", ". dependency:pycodestyle===2.6.0"),
        ("2021-01-04", "invalidated", "framework exists=true"),
        ("2021-01-04", "invalidated", "module exists=true"),
        ("2021-01-04", "invalidated", "tools exists=true"),
    ]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_units_counted_again_per_top_level_directory_equal_counting_every_unit(
    repo, monkeypatch, seed
):
    """A module added or removed counts again only the files of its top-level directory:
    the events equal those of counting every unit again, through nested modules coming and
    going, files added and deleted beside them in the same commits, a top-level directory
    losing its last module, and a root manifest coming and going."""
    import random

    from healthd.sources.git import GitExtractor

    rng = random.Random(seed)
    modules = ["api", "api/v2", "sdk/trace", "sdk/metric", "sdk", "tools/gen"]
    sources = {"api": ".go", "sdk": ".go", "tools": ".py", "web": ".ts"}
    live: set[str] = set()
    for day in range(1, 41):
        files: dict[str, str | None] = {}
        for _ in range(rng.randint(1, 3)):
            top = rng.choice(sorted(sources))
            below = rng.choice(["", "/v2", "/trace", "/metric", "/gen", "/x/y"])
            name = f"{top}{below}/f{rng.randint(0, 6)}{sources[top]}"
            if name in live and rng.random() < 0.4:
                files[name] = None
                live.discard(name)
            else:
                files[name] = "x\n"
                live.add(name)
        for module in rng.sample(modules, rng.randint(0, 2)):
            manifest = f"{module}/go.mod"
            if manifest in live:
                files[manifest] = None
                live.discard(manifest)
            else:
                files[manifest] = go_mod(module, **{"github.com/x/zap": f"v1.{day}.0"})
                live.add(manifest)
        if rng.random() < 0.1:
            files["go.mod"] = None if "go.mod" in live else go_mod("root")
            (live.discard if "go.mod" in live else live.add)("go.mod")
        if not any(content is not None for content in files.values()):
            files["README.md"] = f"day {day}\n"
        repo.commit(f"2024-01-{day:02d}" if day <= 31 else f"2024-02-{day - 31:02d}", files)

    per_top = [dumps_event(ev) for ev in pull(repo).events]
    recount = GitExtractor._recount
    monkeypatch.setattr(GitExtractor, "_recount", lambda self, tops: recount(self, None))
    every_unit = [dumps_event(ev) for ev in pull(repo).events]
    assert per_top == every_unit
    assert sum('"exists"' in line and '"invalidated"' in line for line in per_top) >= 2


def test_a_module_added_and_removed_within_one_second_leaves_none_of_its_facts(repo, brief):
    """ripgrep's grep2 crate came in d9ca529 and went in bb110c1, both within one second
    (git's timestamps are whole seconds). Its facts end with it: a fact asserted at the
    very instant its module goes is not ended by the cascade (the instant's assertions
    hold), so the source ends it itself, and the module's language is current nowhere."""
    repo.commit("2024-01-01", {"Cargo.toml": '[package]\nname = "rg"\n', "src/main.rs": ""})
    repo.commit(
        "2024-01-02",
        {"grep2/Cargo.toml": '[package]\nname = "grep2"\n[dependencies]\nmemchr = "2"\n'},
    )
    repo.commit("2024-01-02", {"grep2/src/lib.rs": ""})
    repo.commit("2024-01-02", {"grep2": None})
    repo.commit("2024-01-03", {"src/util.rs": ""})
    events = pull(repo).events
    truth = GroundTruth(events)
    at_head = events[-1].timestamp
    held = [
        (key.predicate, [f.value for f in truth.current(key, at_head)])
        for key in sorted({ev.fact.key for ev in events if ev.fact.subject == "grep2"})
    ]
    assert held == [
        ("dependency:memchr", []),
        ("exists", []),
        ("language", []),
    ]
    assert [line for line in brief(events) if line[2].startswith("grep2 ")][-3:] == [
        ("2024-01-02", "invalidated", "grep2 dependency:memchr=2"),
        ("2024-01-02", "invalidated", "grep2 language=rust"),
        ("2024-01-02", "invalidated", "grep2 exists=true"),
    ]


def test_a_pull_resumed_in_the_second_a_module_goes_ends_its_facts_as_a_whole_pull_does(repo):
    """A module whose facts were asserted days before it goes ends by the cascade alone,
    whether the pull reads the history at once or resumes from a cursor at a commit made
    in the very second the module is removed (the cursor's commit is no assertion time)."""
    repo.commit("2024-01-01", {"Cargo.toml": '[package]\nname = "rg"\n', "src/main.rs": ""})
    repo.commit(
        "2024-01-02",
        {
            "grep2/Cargo.toml": '[package]\nname = "grep2"\n[dependencies]\nmemchr = "2"\n',
            "grep2/src/lib.rs": "",
        },
    )
    repo.commit("2024-01-05", {"src/util.rs": ""})
    first = pull(repo)
    repo.commit("2024-01-05", {"grep2": None})  # in the second of the cursor's commit
    whole = [dumps_event(ev) for ev in pull(repo).events]
    options = {"path": str(repo.path), "revalidate_clock": "head", "revalidate_interval": "P3650D"}
    resumed = build_source("git", "repo", options).pull(first.cursor)
    assert resumed.error is None, resumed.error
    rest = [dumps_event(ev) for ev in resumed.events]
    assert [dumps_event(ev) for ev in first.events] + rest == whole


def test_workspace_globs_are_read_as_npm_reads_them_a_negation_anywhere_and_braces(repo):
    """npm 11 (`npm pkg get name --workspaces`), pnpm and Yarn leave out what a negation
    names wherever it stands among the globs, and expand braces: with ["!packages/legacy",
    "packages/*", "apps/{web,admin}"] the workspaces are packages/core, apps/web and
    apps/admin (a negation is dropped only by a later glob naming what it names, as npm)."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"private": true, "workspaces": '
            '["!packages/legacy", "packages/*", "apps/{web,admin}", "!tools/*", "tools/lint"]}',
            "packages/core/package.json": '{"name": "core"}',
            "packages/core/index.js": "",
            "packages/legacy/package.json": '{"name": "legacy"}',
            "packages/legacy/index.js": "",
            "apps/web/package.json": '{"name": "web"}',
            "apps/web/main.ts": "",
            "apps/admin/package.json": '{"name": "admin"}',
            "apps/admin/main.ts": "",
            "tools/lint/package.json": '{"name": "lint"}',
            "tools/lint/index.js": "",
        },
    )
    modules = sorted(ev.fact.subject for ev in pull(repo).events if ev.fact.predicate == "exists")
    assert modules == ["apps/admin", "apps/web", "packages/core", "tools/lint"]


def test_a_root_package_json_that_cannot_be_read_keeps_its_workspaces_as_before(repo, brief):
    """A root package.json committed broken (a trailing comma, a merge's conflict markers)
    is read as nothing, its dependencies kept as before; so are its workspaces: the
    templates beside them do not become modules for the commits until it is mended."""
    workspaces = '"workspaces": ["packages/*"], "dependencies": {"ajv": "6.12.4"}'
    repo.commit(
        "2024-01-01",
        {
            "package.json": "{" + workspaces + "}",
            "packages/cli/package.json": '{"name": "cli"}',
            "packages/cli/index.js": "",
            "packages/cli/templates/app/package.json": '{"name": "app"}',
            "packages/cli/templates/app/main.js": "",
        },
    )
    repo.commit("2024-02-01", {"package.json": "{" + workspaces + ",}"})
    repo.commit("2024-03-01", {"package.json": "{" + workspaces + "}"})
    assert [line for line in brief(pull(repo).events) if "exists" in line[2]] == [
        ("2024-01-01", "added", "packages/cli exists=true"),
    ]


@pytest.mark.parametrize(
    ("path", "good", "broken", "why"),
    [
        (
            "pnpm-workspace.yaml",
            "packages:\n  - 'packages/*'\n",
            "packages:\n  - 'packages/*\n",
            "pnpm-workspace.yaml is not YAML: found unexpected end of stream (line 3)",
        ),
        (
            "lerna.json",
            '{"packages": ["packages/*"]}',
            '{"packages": ["packages/*"],}',
            "lerna.json is not JSON: Expecting property name enclosed in double quotes (line 1)",
        ),
    ],
)
def test_a_workspace_file_that_cannot_be_read_keeps_the_workspaces_and_says_so(
    repo, brief, path, good, broken, why
):
    repo.commit(
        "2024-01-01",
        {
            path: good,
            "packages/cli/package.json": '{"name": "cli"}',
            "packages/cli/templates/app/package.json": '{"name": "app"}',
        },
    )
    repo.commit("2024-02-01", {path: broken})
    result = pull(repo)
    assert [line for line in brief(result.events) if "exists" in line[2]] == [
        ("2024-01-01", "added", "packages/cli exists=true"),
    ]
    assert result.skipped == [f"{path}@{repo.head()[:12]}: {why}; kept as before"]


def test_a_pull_resumed_at_a_broken_root_package_json_gives_the_whole_pulls_events(repo):
    """The workspaces kept while the root package.json is broken are not in the tree at a
    cursor there: the cursor keeps them, and the pull resumed from it reads them so."""
    workspaces = '"workspaces": ["packages/*"]'
    repo.commit(
        "2024-01-01",
        {
            "package.json": "{" + workspaces + "}",
            "packages/cli/package.json": '{"name": "cli"}',
            "packages/cli/templates/app/package.json": '{"name": "app"}',
        },
    )
    repo.commit("2024-02-01", {"package.json": "{" + workspaces + ",}"})
    first = pull(repo)
    repo.commit("2024-03-01", {"package.json": "{" + workspaces + "}"})
    whole = [dumps_event(ev) for ev in pull(repo).events]
    options = {"path": str(repo.path), "revalidate_clock": "head", "revalidate_interval": "P3650D"}
    resumed = build_source("git", "repo", options).pull(first.cursor)
    assert resumed.error is None, resumed.error
    assert [dumps_event(ev) for ev in first.events + resumed.events] == whole


def test_a_package_left_out_of_the_workspaces_keeps_its_dependencies_as_a_template_does(
    repo, brief
):
    """A package the root's workspaces stop naming is no module any longer, but its
    package.json still lists its dependencies, which stay facts of its directory (as a
    template's are) rather than ending with the module."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"workspaces": ["packages/*"]}',
            "packages/t/package.json": '{"dependencies": {"ajv": "6.0.0"}}',
            "packages/t/index.js": "",
        },
    )
    repo.commit("2024-02-01", {"package.json": '{"workspaces": ["packages/*", "!packages/t"]}'})
    events = pull(repo).events
    truth = GroundTruth(events)
    ajv = FactKey("packages/t", "dependency:ajv")
    assert [f.value for f in truth.current(ajv, events[-1].timestamp)] == ["6.0.0"]
    assert [line for line in brief(events) if line[0] == "2024-02-01"] == [
        ("2024-02-01", "added", "packages/t dependency:ajv=6.0.0"),
        ("2024-02-01", "invalidated", "packages/t exists=true"),
    ]


def test_a_package_the_workspaces_come_to_name_has_its_dependencies_end_with_it(repo, brief):
    """A package.json the workspaces come to name makes a module, on which its dependencies
    depend from then on: they end with it, in a whole pull as in one resumed at any commit."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"workspaces": ["packages/a"]}',
            "packages/t/package.json": '{"dependencies": {"ajv": "6.0.0"}}',
            "packages/t/index.js": "",
        },
    )
    repo.commit("2024-02-01", {"package.json": '{"workspaces": ["packages/*"]}'})
    first = pull(repo)
    repo.commit("2024-03-01", {"packages/t": None})
    events = pull(repo).events
    ajv = FactKey("packages/t", "dependency:ajv")
    assert GroundTruth(events).current(ajv, events[-1].timestamp) == []
    options = {"path": str(repo.path), "revalidate_clock": "head", "revalidate_interval": "P3650D"}
    rest = build_source("git", "repo", options).pull(first.cursor).events
    assert [dumps_event(ev) for ev in first.events + rest] == [dumps_event(ev) for ev in events]


def test_workspace_braces_expanding_past_reason_are_refused_in_one_line(repo, brief):
    """Each brace of two doubles the globs a workspace stands for: forty of them would be
    a trillion globs. The workspaces are kept as before, and the line says why."""
    repo.commit(
        "2024-01-01",
        {
            "package.json": '{"workspaces": ["packages/*"]}',
            "packages/cli/package.json": '{"name": "cli"}',
            "packages/cli/template/package.json": '{"name": "template"}',
        },
    )
    hostile = "packages/" + "{a,b}" * 40
    braces = repo.commit("2024-02-01", {"package.json": '{"workspaces": ["%s"]}' % hostile})
    many = json.dumps({"workspaces": [f"!n{i}" for i in range(30000)] + ["packages/*"] * 30000})
    repo.commit("2024-03-01", {"package.json": many})
    result = pull(repo)
    assert [line for line in brief(result.events) if "exists" in line[2]] == [
        ("2024-01-01", "added", "packages/cli exists=true"),
    ]
    assert result.skipped == [
        f"package.json@{braces[:12]}: a workspace glob expands to over 1024 globs; kept as before",
        f"package.json@{repo.head()[:12]}: the workspaces name over 1024 globs; kept as before",
    ]
