"""`onboard` and `workspace pull|push` against the template's bucket on moto server."""

from __future__ import annotations

import json
from pathlib import Path

import boto3
import pytest

from nanobot_lambda.adapters.aws.workspace import S3Workspace
from nanobot_lambda.core.workspace import default_workspace_files
from nanobot_lambda.operator.cli import main
from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.ops.workspace_sync import MANIFEST
from tests.support.deployed import deploy_stack


@pytest.fixture
def bucket(resources: TemplateContext) -> str:
    return resources.refs["WorkspaceBucket"]


@pytest.fixture
def workspace(bucket: str) -> S3Workspace:
    return S3Workspace(bucket, boto3.client("s3"))


@pytest.fixture
def stack(resources: TemplateContext) -> str:
    return deploy_stack(resources)


def text(workspace: S3Workspace, path: str) -> str | None:
    file = workspace.read(path, fresh=True)
    return None if file is None else file.text


def run(*arguments: str | Path) -> int:
    return main([str(argument) for argument in arguments])


# -- onboard --------------------------------------------------------------------------------


def test_onboard_writes_the_defaults_once_and_keeps_what_exists(
    stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace.write("SOUL.md", b"my own soul")
    defaults = sorted(default_workspace_files())

    assert run("onboard", "--stack", stack) == 0
    out = capsys.readouterr().out
    assert "kept  SOUL.md" in out
    assert f"Wrote {len(defaults) - 1} file(s); kept 1" in out
    assert text(workspace, "SOUL.md") == "my own soul"  # never overwritten
    for path in defaults:
        assert workspace.read(path, fresh=True) is not None

    assert run("onboard", "--stack", stack) == 0  # idempotent: the second run writes nothing
    out = capsys.readouterr().out
    assert f"Wrote 0 file(s); kept {len(defaults)}" in out
    assert "wrote" not in out


def test_onboard_without_a_bucket_says_what_to_give(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("WORKSPACE_BUCKET", raising=False)
    assert run("onboard") == 2
    assert capsys.readouterr().err == "error: give --stack NAME, or set WORKSPACE_BUCKET\n"


# -- pull / push ----------------------------------------------------------------------------


@pytest.fixture
def pulled(
    stack: str, workspace: S3Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> Path:
    workspace.write("SOUL.md", b"calm")
    workspace.write("skills/tea/SKILL.md", b"---\ndescription: tea\n---\nBrew.")
    folder = tmp_path / "ws"
    assert run("workspace", "pull", folder, "--stack", stack) == 0
    capsys.readouterr()
    return folder


def test_pull_then_push_round_trip(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (pulled / "SOUL.md").read_text() == "calm"
    assert (pulled / "skills/tea/SKILL.md").read_text().endswith("Brew.")
    manifest = json.loads((pulled / MANIFEST).read_text())
    assert set(manifest["files"]) == {"SOUL.md", "skills/tea/SKILL.md"}

    (pulled / "SOUL.md").write_text("calm and curious")
    assert run("workspace", "push", pulled, "--stack", stack) == 0
    assert "pushed SOUL.md (changed" in capsys.readouterr().out
    assert text(workspace, "SOUL.md") == "calm and curious"

    # Nothing changed since: nothing is written.
    assert run("workspace", "push", pulled, "--stack", stack) == 0
    assert "Nothing changed (2 file(s) as pulled)." in capsys.readouterr().out


def test_push_refuses_a_file_changed_in_the_workspace_since_the_pull(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace.write("SOUL.md", b"the assistant's edit")
    (pulled / "SOUL.md").write_text("my edit")
    (pulled / "USER.md").write_text("new and harmless")

    assert run("workspace", "push", pulled, "--stack", stack) == 1
    captured = capsys.readouterr()
    assert "conflict: SOUL.md: changed in the workspace since the pull" in captured.err
    assert text(workspace, "SOUL.md") == "the assistant's edit"  # not overwritten
    assert text(workspace, "USER.md") == "new and harmless"  # the rest went through

    # pull does not clobber the local edit either, until forced.
    assert run("workspace", "pull", pulled, "--stack", stack) == 1
    assert "SOUL.md: changed here since the last pull" in capsys.readouterr().err
    assert (pulled / "SOUL.md").read_text() == "my edit"

    assert run("workspace", "push", pulled, "--force", "--stack", stack) == 0
    assert text(workspace, "SOUL.md") == "my edit"


def test_push_refuses_to_recreate_a_file_deleted_in_the_workspace_since_the_pull(
    pulled: Path,
    stack: str,
    bucket: str,
    workspace: S3Workspace,
    capsys: pytest.CaptureFixture[str],
) -> None:
    boto3.client("s3").delete_object(Bucket=bucket, Key="workspace/SOUL.md")  # the model did
    (pulled / "SOUL.md").write_text("my edit")

    assert run("workspace", "push", pulled, "--stack", stack) == 1
    assert "conflict: SOUL.md: deleted in the workspace since the pull" in capsys.readouterr().err
    assert text(workspace, "SOUL.md") is None

    assert run("workspace", "push", pulled, "--force", "--stack", stack) == 0
    assert text(workspace, "SOUL.md") == "my edit"


def test_a_new_file_is_created_only_if_absent(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    (pulled / "skills" / "jokes").mkdir()
    (pulled / "skills/jokes/SKILL.md").write_text("Tell one.")
    (pulled / "notes.md").write_text("mine")
    workspace.write("notes.md", b"the assistant wrote this meanwhile")

    assert run("workspace", "push", pulled, "--stack", stack) == 1
    captured = capsys.readouterr()
    assert "pushed skills/jokes/SKILL.md (new" in captured.out
    assert "conflict: notes.md: exists in the workspace" in captured.err
    assert text(workspace, "skills/jokes/SKILL.md") == "Tell one."
    assert text(workspace, "notes.md") == "the assistant wrote this meanwhile"


def test_deletions_need_the_flag(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    (pulled / "skills/tea/SKILL.md").unlink()
    assert run("workspace", "push", pulled, "--stack", stack) == 0
    assert "deleted here, kept in the workspace (push --delete" in capsys.readouterr().out
    assert workspace.read("skills/tea/SKILL.md", fresh=True) is not None

    assert run("workspace", "push", pulled, "--delete", "--dry-run", "--stack", stack) == 0
    assert workspace.read("skills/tea/SKILL.md", fresh=True) is not None

    assert run("workspace", "push", pulled, "--delete", "--stack", stack) == 0
    assert workspace.read("skills/tea/SKILL.md", fresh=True) is None
    assert "skills/tea/SKILL.md" not in json.loads((pulled / MANIFEST).read_text())["files"]


def test_pull_follows_the_workspace(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace.write("SOUL.md", b"changed by the assistant")
    boto3.client("s3").delete_object(Bucket=workspace._bucket, Key="workspace/skills/tea/SKILL.md")
    assert run("workspace", "pull", pulled, "--stack", stack) == 0
    assert "removed skills/tea/SKILL.md (deleted in the workspace)" in capsys.readouterr().out
    assert (pulled / "SOUL.md").read_text() == "changed by the assistant"
    assert not (pulled / "skills/tea/SKILL.md").exists()


def test_hidden_files_and_unsafe_keys_are_not_synced(
    pulled: Path, stack: str, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s3 = boto3.client("s3")
    s3.put_object(Bucket=bucket, Key="workspace/a//b.md", Body=b"x")
    s3.put_object(Bucket=bucket, Key="workspace/notes\\..\\escape.md", Body=b"x")
    s3.put_object(Bucket=bucket, Key="workspace/.secret", Body=b"x")
    assert run("workspace", "pull", pulled, "--stack", stack) == 0
    out = capsys.readouterr().out
    assert "skipped 'a//b.md': not a safe workspace path" in out
    assert out.count("not a safe workspace path") == 2
    assert not (pulled / "a").exists()
    assert not [path for path in pulled.parent.iterdir() if "escape" in path.name]
    assert not (pulled / ".secret").exists()

    (pulled / ".DS_Store").write_text("x")
    (pulled / ".git").mkdir()
    (pulled / ".git" / "config").write_text("x")
    (pulled.parent / "outside.md").write_text("outside")
    (pulled / "link.md").symlink_to(pulled.parent / "outside.md")
    assert run("workspace", "push", pulled, "--stack", stack) == 0
    assert "skipped link.md: a symlink" in capsys.readouterr().out
    keys = {item["Key"] for item in s3.list_objects_v2(Bucket=bucket)["Contents"]}
    assert not {"workspace/.DS_Store", "workspace/.git/config", "workspace/link.md"} & keys
    assert f"workspace/{MANIFEST}" not in keys


def test_a_folder_of_another_bucket_is_refused(
    pulled: Path, resources: TemplateContext, capsys: pytest.CaptureFixture[str]
) -> None:
    boto3.client("s3").create_bucket(Bucket="another-workspace-bucket")
    other = deploy_stack(resources, outputs={"WorkspaceBucketName": "another-workspace-bucket"})
    assert run("workspace", "push", pulled, "--stack", other) == 2
    assert "was pulled from bucket" in capsys.readouterr().err


def test_a_manifest_naming_paths_outside_is_refused(
    pulled: Path, stack: str, workspace: S3Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = json.loads((pulled / MANIFEST).read_text())
    manifest["files"]["../../victim.md"] = {"etag": '"x"', "sha256": "0"}
    (pulled / MANIFEST).write_text(json.dumps(manifest))
    assert run("workspace", "push", pulled, "--delete", "--stack", stack) == 2
    assert "'../../victim.md', outside the workspace" in capsys.readouterr().err
    assert run("workspace", "pull", pulled, "--stack", stack) == 2


def test_versions_and_restore_a_scope_s_memory(
    stack: str, bucket: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The operator's way to undo a bad consolidation: list MEMORY.md's versions, restore one."""
    alice = S3Workspace(bucket, boto3.client("s3"), "scopes/people/222222222/")
    alice.write("memory/MEMORY.md", b"# Memory\n- allergic to nuts\n")
    alice.write("memory/MEMORY.md", b"# Memory\n")

    assert run("workspace", "versions", "--scope", "people/222222222", "--stack", stack) == 0
    listing = capsys.readouterr().out
    assert "Versions of memory/MEMORY.md" in listing
    assert "1. " in listing and "2. " in listing and "+2 −0 lines" in listing

    args = ("--scope", "people/222222222", "--stack", stack)
    assert run("workspace", "restore", "2", *args) == 0
    assert "Restored memory/MEMORY.md" in capsys.readouterr().out
    assert text(alice, "memory/MEMORY.md") == "# Memory\n- allergic to nuts\n"

    assert run("workspace", "restore", "9", *args) == 1
    assert "There is no version 9" in capsys.readouterr().out
    assert run("workspace", "versions", "../../workspace/SOUL.md", *args) == 2
    assert "not a workspace path" in capsys.readouterr().err
