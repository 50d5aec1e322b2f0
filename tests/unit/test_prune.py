"""layers/prune.py: the compiled extensions of a layer lose their symbol tables, and still load."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import regex

PRUNE = Path(__file__).resolve().parents[2] / "layers" / "prune.py"
spec = importlib.util.spec_from_file_location("prune", PRUNE)
assert spec is not None and spec.loader is not None
prune = importlib.util.module_from_spec(spec)
spec.loader.exec_module(prune)

needs_strip = pytest.mark.skipif(shutil.which("strip") is None, reason="binutils' strip")


@needs_strip
def test_extensions_are_stripped_and_still_import(tmp_path: Path) -> None:
    # regex's wheel ships its extension with symbols, as tokenizers' and cryptography's do.
    shutil.copytree(Path(regex.__file__).parent, tmp_path / "regex")
    (extension,) = (tmp_path / "regex").glob("_regex*.so")
    before = extension.stat().st_size
    # Named like an extension, but not one: left alone.
    impostor = tmp_path / "regex" / "notes.so"
    impostor.write_text("not an ELF file")

    saved = prune.strip_extensions(tmp_path)

    assert saved == before - extension.stat().st_size
    assert saved > 100_000
    assert impostor.read_text() == "not an ELF file"
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import regex, sys; print(regex.__file__, regex.sub('a+', 'b', 'caat'))",
        ],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        check=True,
    )
    assert loaded.stdout.split() == [str(tmp_path / "regex" / "__init__.py"), "cbt"]


@needs_strip
def test_a_stripped_extension_is_not_stripped_again(tmp_path: Path) -> None:
    shutil.copytree(Path(regex.__file__).parent, tmp_path / "regex")
    prune.strip_extensions(tmp_path)
    assert prune.strip_extensions(tmp_path) == 0


def test_without_a_strip_that_reads_elf_nothing_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copytree(Path(regex.__file__).parent, tmp_path / "regex")
    (extension,) = (tmp_path / "regex").glob("_regex*.so")
    before = extension.read_bytes()
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))

    assert prune.strip_extensions(tmp_path) == 0
    assert extension.read_bytes() == before
    assert "not stripped: no GNU or LLVM `strip`" in capsys.readouterr().out
