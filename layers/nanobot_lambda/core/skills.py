"""Skills, nanobot's progressive disclosure: folders `skills/<name>/SKILL.md` that teach a task.

The model always sees a compact summary of every skill (name, description, where to read it,
whether it can run here); the full text of the few always-on skills goes in the system prompt,
and the model opens any other SKILL.md with `read_file` when it needs it, so a skill costs a
line of prompt until it is used. Skills come from the workspace (the user's, editable) or ship
in the package (`builtin_skills/`, read-only); a workspace skill overrides a built-in one of the
same name.

A skill can be turned off (the console's switch): `skills/.off` lists the names of the skills
left out, one a line. An off skill is not in the prompt at all, built-in or not, and is listed
as off where skills are shown to the owner; turning it on again is taking its line out.

A SKILL.md written by hand (or by the model) may be broken: parsing never raises, the skill is
listed as unavailable with the problem, so the model can see and fix it. One kind of break is
forgiven: skills written for other agents (Claude Code, OpenClaw) often leave a colon unquoted
in `description:`, which YAML rejects. Such a frontmatter is read again entry by entry, with a
`name` or `description` that still fails taken as plain text (as OpenClaw's loader does): the
skill stays usable with its real description, and the YAML problem is a `warning` for the
operator (logged, shown by `doctor`), never in the prompt. Rendering is deterministic: the same
skills give the same bytes, which keeps the prompt prefix cacheable.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Literal
from xml.sax.saxutils import escape, quoteattr

import yaml

from nanobot_lambda.core import texts

logger = logging.getLogger(__name__)

SkillSource = Literal["workspace", "builtin"]
Which = Callable[[str], str | None]

SKILLS_DIR = "skills"
SKILL_FILE = "SKILL.md"
BUILTIN_PACKAGE_DIR = "builtin_skills"
# A description taken from the body is a guess: keep it to a line. One given in the frontmatter
# is the author's, but it is in every prompt: cap it as the Agent Skills format does.
BODY_DESCRIPTION_CHARS = 200
MAX_DESCRIPTION_CHARS = 1024
METADATA_NAMESPACES = ("nanobot", "openclaw")
ACTIVE_SKILL_SEPARATOR = "\n\n---\n\n"
OFF_FILE = "skills/.off"  # the names of the skills turned off, one a line

_SKILL_PATH = re.compile(r"skills/([^/]+)/SKILL\.md")
_FENCE = re.compile(r"---[ \t]*")
# Characters XML 1.0 forbids even escaped: dropped rather than breaking the summary.
_XML_INVALID = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
# The lenient read of a frontmatter YAML rejects: a `key:` line at the margin starts an entry;
# the fields that may then be taken as plain text; and the first characters that say a value
# is not plain text (flow collections, tags, anchors, aliases, block scalars, reserved).
_ENTRY = re.compile(r"([\w.-]+)[ \t]*:(?=[ \t]|$)")
_PLAIN_TEXT_FIELDS = frozenset({"name", "description"})
_NOT_PLAIN_TEXT = tuple("[{!&*|>%@`")
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0", ""})


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    location: str
    """Workspace-relative path `read_file` accepts: `skills/<name>/SKILL.md`."""
    base_dir: str
    """`skills/<name>`: the skill's own relative paths (references/, scripts/) start there."""
    source: SkillSource
    always: bool
    available: bool
    missing: tuple[str, ...]
    """Unmet requirements, e.g. `("bin:ffmpeg", "env:BRAVE_API_KEY")`."""
    body: str
    """SKILL.md without its frontmatter."""
    error: str | None
    """What is wrong with the frontmatter, in one line; such a skill is listed, unavailable."""
    warning: str | None = None
    """A YAML problem the lenient read worked around, in one line, for the operator (logged,
    reported by `doctor`); the skill is listed as usual and the model never sees it."""
    off: bool = False
    """Turned off (`skills/.off`): left out of the prompt."""


class _FrontmatterError(ValueError):
    """A frontmatter problem, worded for the model in one line."""


@dataclass(frozen=True)
class _Settings:
    description: str = ""
    always: bool = False
    bins: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    warning: str | None = None


def parse_skill(
    name: str,
    text: str,
    location_source: SkillSource,
    environ: Mapping[str, str],
    which: Which = shutil.which,
) -> Skill:
    """One skill from its folder name and SKILL.md text. Never raises: problems go in `error`."""
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    frontmatter, body, error = _split_frontmatter(text)
    settings = _Settings()
    if frontmatter is not None and error is None:
        try:
            settings = _parse_frontmatter(frontmatter)
        except _FrontmatterError as problem:
            error = str(problem)
    body = body.strip()
    missing = (
        ()
        if error
        else tuple(f"bin:{binary}" for binary in settings.bins if not which(binary))
        + tuple(f"env:{variable}" for variable in settings.env if not environ.get(variable))
    )
    base_dir = f"{SKILLS_DIR}/{name}"
    location = f"{base_dir}/{SKILL_FILE}"
    if settings.warning:
        _warn_once(location, location_source, settings.warning)
    return Skill(
        name=name,
        description=settings.description or _description_from_body(body),
        location=location,
        base_dir=base_dir,
        source=location_source,
        always=settings.always,
        available=error is None and not missing,
        missing=missing,
        body=body,
        error=error,
        warning=settings.warning,
    )


def builtin_skill_files() -> dict[str, str]:
    """Every file of every built-in skill, keyed by its workspace-relative path (`skills/…`).

    The file tools serve these read-only where the workspace has no file of that path, so a
    built-in skill's location and references read the same as a workspace skill's.
    """
    return dict(_builtin_files())


def load_skills(
    workspace_skill_md: Mapping[str, str],
    environ: Mapping[str, str],
    which: Which = shutil.which,
    off: frozenset[str] = frozenset(),
) -> list[Skill]:
    """All skills, sorted by name.

    `workspace_skill_md` maps `skills/<name>/SKILL.md` to its text, from the workspace; other
    paths are ignored. Workspace skills override built-in ones of the same name. A skill named
    in `off` (`off_names` of `skills/.off`) is marked off.
    """
    found: dict[str, Skill] = {}
    sources: tuple[tuple[SkillSource, Mapping[str, str]], ...] = (
        ("builtin", builtin_skill_files()),
        ("workspace", workspace_skill_md),
    )
    for source, files in sources:
        for path, text in files.items():
            match = _SKILL_PATH.fullmatch(path)
            if match and not match[1].startswith("."):
                found[match[1]] = parse_skill(match[1], text, source, environ, which)
    return [
        replace(found[name], off=True) if name in off else found[name] for name in sorted(found)
    ]


def off_names(text: str | None) -> frozenset[str]:
    """The skills `skills/.off` turns off."""
    return frozenset(line.strip() for line in (text or "").splitlines() if line.strip())


def off_text(names: frozenset[str]) -> str:
    """`skills/.off` for these names."""
    return "".join(f"{name}\n" for name in sorted(names))


def render_active_skills(skills: Sequence[Skill]) -> str:
    """The full text of the available always-on skills, for the system prompt ("" if none).

    An always-on skill that cannot run here is only summarised: its instructions would send
    the model to tools or settings it does not have.
    """
    return ACTIVE_SKILL_SEPARATOR.join(
        texts.render("active_skill", skill=skill.name, base_dir=skill.base_dir, body=skill.body)
        for skill in _sorted(skills)
        if skill.always and skill.available and not skill.off
    )


def render_skills_summary(skills: Sequence[Skill]) -> str:
    """The preamble and one compact `<skill>` line per skill, for every prompt ("" if none);
    a skill turned off is left out."""
    skills = [skill for skill in skills if not skill.off]
    if not skills:
        return ""
    lines = [texts.load("skills_preamble"), "<skills>"]
    lines.extend(_summary_line(skill) for skill in _sorted(skills))
    lines.append("</skills>")
    return "\n".join(lines)


def _summary_line(skill: Skill) -> str:
    parts = [
        f"<skill available={quoteattr(str(skill.available).lower())}>",
        f"<name>{_xml_text(skill.name)}</name>",
        f"<description>{_xml_text(skill.description)}</description>",
        f"<location>{_xml_text(skill.location)}</location>",
    ]
    if not skill.available and skill.missing:
        parts.append(f"<requires>{_xml_text(', '.join(skill.missing))}</requires>")
    if skill.error:
        parts.append(f"<error>{_xml_text(skill.error)}</error>")
    parts.append("</skill>")
    return "".join(parts)


def _xml_text(value: str) -> str:
    return escape(_XML_INVALID.sub("", value))


def _sorted(skills: Sequence[Skill]) -> list[Skill]:
    return sorted(skills, key=lambda skill: (skill.name, skill.source))


def _split_frontmatter(text: str) -> tuple[str | None, str, str | None]:
    """(frontmatter, body, error): a leading block between two `---` lines, if any."""
    lines = text.split("\n")
    if not _FENCE.fullmatch(lines[0]):
        return None, text, None
    for index in range(1, len(lines)):
        if _FENCE.fullmatch(lines[index]):
            return "\n".join(lines[1:index]), "\n".join(lines[index + 1 :]), None
    return None, "\n".join(lines[1:]), "frontmatter has no closing '---' line"


@lru_cache(maxsize=1024)
def _parse_frontmatter(frontmatter: str) -> _Settings:
    """Settings from frontmatter text. Cached by the text: the system prompt is rebuilt every
    turn, and re-parsing unchanged YAML made its cost grow with the number of skills. (A
    broken frontmatter raises and is simply parsed again next time.)

    YAML first; if it rejects the text, the lenient read (`_read_entries`); if that cannot
    read it either, the YAML problem is the error."""
    try:
        fields = _load_yaml(frontmatter)
    except _FrontmatterError as problem:
        lenient = _read_entries(frontmatter)
        if lenient is None:
            raise
        return replace(_settings(lenient), warning=f"{problem}; read line by line")
    if fields is None:
        return _Settings()
    if not isinstance(fields, dict):
        raise _FrontmatterError(f"frontmatter must be a mapping of fields, not {_kind(fields)}")
    return _settings(fields)


@cache
def _warn_once(location: str, source: str, warning: str) -> None:
    """Log a lenient read once per container, not on every turn that lists the skill."""
    logger.warning("skill %s (%s): %s", location, source, warning)


def _load_yaml(text: str) -> object:
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as problem:
        where = f" at line {problem.problem_mark.line + 2}" if problem.problem_mark else ""
        raise _FrontmatterError(
            f"frontmatter is not valid YAML: {_one_line(problem.problem or str(problem))}{where}"
        ) from None
    except (yaml.YAMLError, ValueError, ArithmeticError, RecursionError) as problem:
        raise _FrontmatterError(
            f"frontmatter is not valid YAML: {_one_line(str(problem))}"
        ) from None


def _read_entries(frontmatter: str) -> dict[object, object] | None:
    """The fields of a frontmatter YAML rejects, or None if it cannot be read this way either.

    Each top-level entry (a `key:` line at the margin and the lines up to the next one) is
    parsed alone; a `name` or `description` YAML still rejects is its text, one line, without
    matching surrounding quotes. Any other entry YAML rejects, text before the first entry, or
    neither a name nor a description found: unreadable (its requirements could be anywhere).
    """
    entries: list[tuple[str, list[str]]] = []
    for line in frontmatter.split("\n"):
        if match := _ENTRY.match(line):
            entries.append((match[1], [line]))
        elif entries:
            entries[-1][1].append(line)
        elif line.strip() and not line.lstrip().startswith("#"):
            return None
    fields: dict[object, object] = {}
    for key, lines in entries:
        try:
            entry = _load_yaml("\n".join(lines))
        except _FrontmatterError:
            text = _plain_text(lines) if key in _PLAIN_TEXT_FIELDS else None
            if text is None:
                return None
            entry = {key: text}
        if not isinstance(entry, dict):
            return None
        fields.update(entry)
    return fields if _PLAIN_TEXT_FIELDS & fields.keys() else None


def _plain_text(lines: list[str]) -> str | None:
    """An entry's value as text: the rest of its `key:` line and the lines under it."""
    first = lines[0].split(":", 1)[1]
    rest = [line for line in lines[1:] if not line.lstrip().startswith("#")]
    text = _one_line(" ".join([first, *rest]))
    if not text or text.startswith(_NOT_PLAIN_TEXT):
        return None
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1].strip()
    return text or None


def _settings(fields: dict[object, object]) -> _Settings:
    namespace, own = _own_metadata(fields.get("metadata"))
    if "always" in own:
        always = _flag(own["always"], f"{namespace}.always")
    else:
        always = _flag(fields.get("always"), "always")
    top_bins, top_env = _requires(fields.get("requires"), "requires")
    own_bins, own_env = _requires(own.get("requires"), f"{namespace}.requires")
    return _Settings(
        description=_description(fields.get("description")),
        always=always,
        bins=tuple(dict.fromkeys(top_bins + own_bins)),
        env=tuple(dict.fromkeys(top_env + own_env)),
    )


def _own_metadata(value: object) -> tuple[str, dict[object, object]]:
    """(where, settings): `metadata.nanobot` (or `metadata.openclaw`), as YAML or a JSON string."""
    if value is None or value == "":
        return "metadata", {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as problem:
            raise _FrontmatterError(f"metadata is not valid JSON: {problem.msg}") from None
    if not isinstance(value, dict):
        raise _FrontmatterError(f"metadata must be a mapping or a JSON object, not {_kind(value)}")
    for namespace in METADATA_NAMESPACES:
        if namespace in value:
            where, own = f"metadata.{namespace}", value[namespace]
            if own is None:
                return where, {}
            if not isinstance(own, dict):
                raise _FrontmatterError(f"{where} must be a mapping, not {_kind(own)}")
            return where, own
    return "metadata", {}


def _description(value: object) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _FrontmatterError(f"description must be text, not {_kind(value)}")
    return _shorten(_one_line(value), MAX_DESCRIPTION_CHARS)


def _flag(value: object, field: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    raise _FrontmatterError(f"{field} must be true or false, not {_brief(value)}")


def _requires(value: object, field: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(bins, env) of a `requires` mapping; other keys are ignored."""
    if value is None:
        return (), ()
    if not isinstance(value, dict):
        raise _FrontmatterError(f"{field} must be a mapping with bins and env, not {_kind(value)}")
    return _names(value.get("bins"), f"{field}.bins"), _names(value.get("env"), f"{field}.env")


def _names(value: object, field: str) -> tuple[str, ...]:
    """A list of names (or one); empty and null entries (`[jq, null]`, `[~]`) are ignored."""
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(item, str | None) for item in items):
        raise _FrontmatterError(f"{field} must be a list of names, not {_brief(value)}")
    return tuple(item.strip() for item in items if item and item.strip())


def _description_from_body(body: str) -> str:
    """The first line of prose: not a heading, comment, fence or rule."""
    for line in body.split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith(("#", "<!--", "```", "~~~", "---")):
            return _shorten(_one_line(stripped), BODY_DESCRIPTION_CHARS)
    return ""


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:.") + "…"


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "text"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return type(value).__name__


def _brief(value: object) -> str:
    return _shorten(_one_line(repr(value)), 60)


@cache
def _builtin_files() -> tuple[tuple[str, str], ...]:
    files: list[tuple[str, str]] = []

    def walk(node: Traversable, prefix: str) -> None:
        for child in node.iterdir():
            if child.name.startswith((".", "__")):
                continue
            path = f"{prefix}/{child.name}"
            if child.is_dir():
                walk(child, path)
            else:
                files.append((path, child.read_text(encoding="utf-8")))

    walk(resources.files("nanobot_lambda") / BUILTIN_PACKAGE_DIR, SKILLS_DIR)
    return tuple(sorted(files))
