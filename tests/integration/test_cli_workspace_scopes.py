"""`workspace pull|push --scope`: a person's or a group's workspace, on moto server.

The owner's workspace is under workspace/, a person's under scopes/people/<user id>/, a group's
under scopes/groups/<chat id without the minus>/ (core/scopes.py). A folder stays tied to the
scope it was pulled from, and a --scope that is no scope touches nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from nanobot_lambda.adapters.aws.workspace import S3Workspace, scope_prefix
from nanobot_lambda.core.scopes import Scope
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.ops.workspace_sync import MANIFEST
from tests.support.deployed import deploy_stack

PERSON = "people/222222222"
OTHER_PERSON = "people/333333333"
GROUP = "groups/1001234567890"


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    return resources.refs["WorkspaceBucket"]


@pytest.fixture
def stack(resources: TemplateContext) -> str:
    return deploy_stack(resources)


@pytest.fixture
def owner(bucket: str) -> S3Workspace:
    return S3Workspace(bucket, boto3.client("s3"))


def scoped(bucket: str, name: str) -> S3Workspace:
    return S3Workspace(bucket, boto3.client("s3"), scope_prefix(Scope(name)))


@pytest.fixture
def person(bucket: str) -> S3Workspace:
    return scoped(bucket, PERSON)


def text(workspace: S3Workspace, path: str) -> str | None:
    file = workspace.read(path, fresh=True)
    return None if file is None else file.text


def run(*arguments: str | Path) -> int:
    return main([str(argument) for argument in arguments])


def objects(bucket: str) -> dict[str, str]:
    """Every key of the bucket and its ETag."""
    s3 = boto3.client("s3")
    found: dict[str, str] = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        found.update({item["Key"]: item["ETag"] for item in page.get("Contents", [])})
    return found


@pytest.fixture
def seeded(owner: S3Workspace, person: S3Workspace, bucket: str) -> None:
    """The owner's workspace, a person's scope and another person's scope, each with files."""
    owner.write("SOUL.md", b"the owner's soul")
    owner.write("USER.md", b"the owner")
    owner.write("memory/MEMORY.md", b"the owner's memory")
    person.write("USER.md", b"Bob")
    person.write("memory/MEMORY.md", b"Bob likes tea")
    scoped(bucket, OTHER_PERSON).write("USER.md", b"Carol")


@pytest.fixture
def pulled(seeded: None, stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """A folder pulled from the person's scope."""
    folder = tmp_path / "bob"
    assert run("workspace", "pull", folder, "--scope", PERSON, "--stack", stack) == 0
    capsys.readouterr()
    return folder


def test_pull_a_persons_scope_brings_theirs_only(
    seeded: None, stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bob"
    assert run("workspace", "pull", folder, "--scope", PERSON, "--stack", stack) == 0
    out = capsys.readouterr().out
    assert f"Pulling scope {PERSON} (scopes/{PERSON}/) into {folder}" in out
    assert (folder / "USER.md").read_text() == "Bob"
    assert (folder / "memory/MEMORY.md").read_text() == "Bob likes tea"
    assert not (folder / "SOUL.md").exists()  # the owner's, not the scope's
    manifest = json.loads((folder / MANIFEST).read_text())
    assert set(manifest["files"]) == {"USER.md", "memory/MEMORY.md"}
    assert manifest["prefix"] == f"scopes/{PERSON}/"


def test_pull_without_scope_is_still_the_owners(
    seeded: None, stack: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ws"
    assert run("workspace", "pull", folder, "--stack", stack) == 0
    assert "Pulling the owner's workspace (workspace/)" in capsys.readouterr().out
    assert (folder / "USER.md").read_text() == "the owner"
    assert (folder / "SOUL.md").read_text() == "the owner's soul"
    assert json.loads((folder / MANIFEST).read_text())["prefix"] == "workspace/"


def test_push_an_edit_back_into_the_same_scope(
    pulled: Path,
    stack: str,
    bucket: str,
    owner: S3Workspace,
    person: S3Workspace,
    capsys: pytest.CaptureFixture[str],
) -> None:
    owner_before = {key: etag for key, etag in objects(bucket).items() if key.startswith("work")}
    (pulled / "USER.md").write_text("Bob, who prefers green tea")
    (pulled / "notes.md").write_text("new")

    # The bare chat id names the same scope as people/<id>.
    assert run("workspace", "push", pulled, "--scope", "222222222", "--stack", stack) == 0
    assert "pushed USER.md (changed" in capsys.readouterr().out
    assert text(person, "USER.md") == "Bob, who prefers green tea"
    assert text(person, "notes.md") == "new"
    keys = objects(bucket)
    assert f"scopes/{PERSON}/notes.md" in keys
    assert {key: etag for key, etag in keys.items() if key.startswith("work")} == owner_before
    assert text(owner, "USER.md") == "the owner"
    assert text(scoped(bucket, OTHER_PERSON), "notes.md") is None

    assert run("workspace", "push", pulled, "--scope", PERSON, "--stack", stack) == 0
    assert "Nothing changed (3 file(s) as pulled)." in capsys.readouterr().out


def test_a_groups_chat_id_with_or_without_its_minus_is_the_same_scope(
    stack: str, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    group = scoped(bucket, GROUP)
    group.write("USER.md", b"the tea club")
    folder = tmp_path / "club"
    pull = ("workspace", "pull", folder, "--scope", "groups/-1001234567890", "--stack", stack)
    assert run(*pull) == 0
    assert (folder / "USER.md").read_text() == "the tea club"
    capsys.readouterr()

    (folder / "USER.md").write_text("the tea and cake club")
    assert run("workspace", "push", folder, "--scope=-1001234567890", "--stack", stack) == 0
    assert text(group, "USER.md") == "the tea and cake club"
    assert "scopes/groups/1001234567890/USER.md" in objects(bucket)
    assert run("workspace", "push", folder, "--scope", GROUP, "--stack", stack) == 0
    assert "Nothing changed" in capsys.readouterr().out


def test_a_folder_pulled_from_another_scope_is_refused(
    pulled: Path, stack: str, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (pulled / "USER.md").write_text("Bob's edit")
    (pulled / "notes.md").write_text("Bob's notes")
    before = objects(bucket)
    manifest = (pulled / MANIFEST).read_text()

    for scope in (["--scope", OTHER_PERSON], ["--scope", GROUP], []):  # [] the owner's
        for force in ([], ["--force"]):  # --force does not cross scopes either
            assert run("workspace", "push", pulled, *scope, *force, "--stack", stack) == 2
            err = capsys.readouterr().err
            assert f"was pulled from scope {PERSON} (scopes/{PERSON}/)" in err
            assert f"sync it with --scope {PERSON}" in err
    assert "not the owner's workspace (workspace/)" in err

    # Nor is another scope pulled into it.
    assert run("workspace", "pull", pulled, "--scope", OTHER_PERSON, "--stack", stack) == 2
    assert f"was pulled from scope {PERSON}" in capsys.readouterr().err
    assert objects(bucket) == before
    assert (pulled / MANIFEST).read_text() == manifest
    assert (pulled / "USER.md").read_text() == "Bob's edit"

    # And a folder of the owner's workspace is not pushed into a scope.
    ours = tmp_path / "ws"
    assert run("workspace", "pull", ours, "--stack", stack) == 0
    (ours / "SOUL.md").write_text("a soul for Bob?")
    capsys.readouterr()
    assert run("workspace", "push", ours, "--scope", PERSON, "--stack", stack) == 2
    err = capsys.readouterr().err
    assert "was pulled from the owner's workspace (workspace/)" in err
    assert "sync it without --scope" in err
    assert objects(bucket) == before


def test_a_folder_pulled_before_scopes_is_the_owners(
    seeded: None, stack: str, bucket: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ws"
    assert run("workspace", "pull", folder, "--stack", stack) == 0
    manifest = json.loads((folder / MANIFEST).read_text())
    del manifest["prefix"]  # as written before scopes
    (folder / MANIFEST).write_text(json.dumps(manifest))
    (folder / "USER.md").write_text("edited")
    before = objects(bucket)
    capsys.readouterr()

    assert run("workspace", "push", folder, "--scope", PERSON, "--stack", stack) == 2
    assert "was pulled from the owner's workspace" in capsys.readouterr().err
    assert objects(bucket) == before
    assert run("workspace", "push", folder, "--stack", stack) == 0
    assert objects(bucket)["workspace/USER.md"] != before["workspace/USER.md"]


HOSTILE_SCOPES = [
    "people/../x",
    "people/2/../../workspace",
    "people/abc",
    "groups/",
    "../workspace",
    "people/1/2",
    "people/-2",
    "people/0",
    "people/2/",
    "/people/2",
    "people/2\n",
    "people/\u0662",  # an Arabic-Indic digit
    "workspace",
    "",
]


@pytest.mark.parametrize("value", HOSTILE_SCOPES)
def test_a_scope_that_is_no_scope_touches_nothing(
    value: str,
    seeded: None,
    stack: str,
    bucket: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    ours = tmp_path / "ws"
    assert run("workspace", "pull", ours, "--stack", stack) == 0
    (ours / "USER.md").write_text("edited")
    (ours / "new.md").write_text("new")
    manifest = (ours / MANIFEST).read_text()
    before = objects(bucket)
    capsys.readouterr()

    fresh = tmp_path / "fresh"
    assert run("workspace", "pull", fresh, "--scope", value, "--stack", stack) == 2
    captured = capsys.readouterr()
    assert "is not a scope" in captured.err or "is not a Telegram id" in captured.err
    assert "people/<user id>, groups/<chat id>" in captured.err
    assert captured.out == ""
    assert not fresh.exists()

    for extra in ([], ["--force"], ["--delete", "--force"]):
        assert run("workspace", "push", ours, f"--scope={value}", *extra, "--stack", stack) == 2
        captured = capsys.readouterr()
        assert "people/<user id>, groups/<chat id>" in captured.err
        assert captured.out == ""
    assert objects(bucket) == before
    assert (ours / MANIFEST).read_text() == manifest
