"""Skills: frontmatter parsing that never raises, requirements, overrides, and the prompt texts."""

from __future__ import annotations

import logging
import re
import xml.etree.ElementTree as ET

import pytest

from nanobot_lambda.core import texts
from nanobot_lambda.core.skills import (
    BODY_DESCRIPTION_CHARS,
    Skill,
    _warn_once,
    builtin_skill_files,
    load_skills,
    parse_skill,
    render_active_skills,
    render_skills_summary,
)

BUILTINS = ("cron", "memory", "skill-creator", "summarize", "weather")


def no_bins(_: str) -> str | None:
    return None


def all_bins(name: str) -> str | None:
    return f"/usr/bin/{name}"


def parse(text: str, name: str = "demo", environ: dict[str, str] | None = None) -> Skill:
    return parse_skill(name, text, "workspace", environ or {}, all_bins)


def skill_md(frontmatter: str, body: str = "# Demo\n\nDo the thing.\n") -> str:
    return f"---\n{frontmatter}\n---\n{body}"


def summary_elements(summary: str) -> list[ET.Element]:
    preamble, xml = summary.split("\n", 1)
    assert preamble == texts.load("skills_preamble")
    return list(ET.fromstring(xml))  # noqa: S314 - our own output, under test


# Frontmatter


def test_basic_skill() -> None:
    skill = parse(skill_md("name: demo\ndescription: Does the thing."))
    assert skill == Skill(
        name="demo",
        description="Does the thing.",
        location="skills/demo/SKILL.md",
        base_dir="skills/demo",
        source="workspace",
        always=False,
        available=True,
        missing=(),
        body="# Demo\n\nDo the thing.",
        error=None,
    )


def test_folded_description() -> None:
    skill = parse(skill_md("description: >\n  First part\n  second part.\nname: demo"))
    assert skill.description == "First part second part."
    assert skill.error is None


def test_literal_description_becomes_one_line() -> None:
    skill = parse(skill_md("description: |\n  Line one.\n  Line two.\n"))
    assert skill.description == "Line one. Line two."


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("true", True),
        ("false", False),
        ('"false"', False),
        ('"False"', False),
        ('"true"', True),
        ('"yes"', True),
        ("yes", True),
        ("no", False),
        ("", False),
    ],
)
def test_always_top_level(value: str, expected: bool) -> None:
    skill = parse(skill_md(f"description: d\nalways: {value}"))
    assert skill.error is None
    assert skill.always is expected


def test_always_that_is_not_a_boolean_is_an_error() -> None:
    skill = parse(skill_md("description: d\nalways: maybe"))
    assert skill.error is not None
    assert "always" in skill.error
    assert not skill.available
    assert not skill.always


def test_metadata_as_json_string() -> None:
    skill = parse(
        skill_md(
            'description: d\nmetadata: {"nanobot": {"always": true, "emoji": "🌤",'
            ' "requires": {"bins": ["ffmpeg"], "env": ["BRAVE_API_KEY"]}}}'
        ),
        environ={"BRAVE_API_KEY": "k"},
    )
    assert skill.error is None
    assert skill.always
    assert skill.available


def test_metadata_as_quoted_json_string() -> None:
    text = skill_md(
        'description: d\nmetadata: \'{"nanobot": {"always": true, '
        '"requires": {"env": ["TOKEN"]}}}\''
    )
    skill = parse(text)
    assert skill.error is None
    assert skill.always
    assert skill.missing == ("env:TOKEN",)


def test_metadata_as_yaml_mapping() -> None:
    skill = parse(
        skill_md(
            "description: d\nmetadata:\n  nanobot:\n    always: true\n"
            "    requires:\n      bins: [ffmpeg]\n      env: [X_KEY]"
        )
    )
    assert skill.always
    assert skill.missing == ("env:X_KEY",)
    assert not skill.available
    assert skill.error is None


def test_metadata_under_openclaw() -> None:
    skill = parse(
        skill_md('description: d\nmetadata: {"openclaw": {"always": "yes"}}'),
    )
    assert skill.always
    assert skill.error is None


def test_nanobot_metadata_wins_over_openclaw_and_top_level() -> None:
    skill = parse(
        skill_md(
            "description: d\nalways: true\n"
            'metadata: {"nanobot": {"always": false}, "openclaw": {"always": true}}'
        )
    )
    assert skill.always is False


def test_other_metadata_is_ignored() -> None:
    skill = parse(skill_md('description: d\nmetadata: {"author": "me", "always": true}'))
    assert skill.error is None
    assert skill.always is False


def test_top_level_requires_merge_with_metadata_requires() -> None:
    skill = parse_skill(
        "demo",
        skill_md(
            "description: d\nrequires:\n  bins: [jq]\n  env: [A]\n"
            'metadata: {"nanobot": {"requires": {"bins": ["jq", "ffmpeg"], "env": ["B"]}}}'
        ),
        "workspace",
        {"B": "set"},
        no_bins,
    )
    assert skill.missing == ("bin:jq", "bin:ffmpeg", "env:A")
    assert not skill.available


def test_folder_name_wins_over_frontmatter_name() -> None:
    skill = parse(skill_md("name: other\ndescription: d"), name="real")
    assert skill.name == "real"
    assert skill.location == "skills/real/SKILL.md"
    assert skill.base_dir == "skills/real"


def test_no_frontmatter() -> None:
    skill = parse("# Title\n\n<!-- note -->\nFirst real line.\nSecond line.\n")
    assert skill.error is None
    assert skill.available
    assert skill.description == "First real line."
    assert skill.body == "# Title\n\n<!-- note -->\nFirst real line.\nSecond line."


def test_description_from_body_when_missing_or_empty() -> None:
    assert parse(skill_md("always: false")).description == "Do the thing."
    assert parse(skill_md("description: ''")).description == "Do the thing."
    assert parse(skill_md("")).description == "Do the thing."


def test_description_from_body_is_trimmed() -> None:
    skill = parse("# T\n" + "word " * 200)
    assert len(skill.description) <= BODY_DESCRIPTION_CHARS
    assert skill.description.endswith("…")
    assert skill.description.startswith("word word")


def test_empty_skill_file() -> None:
    skill = parse("")
    assert skill.error is None
    assert skill.description == ""
    assert skill.body == ""


def test_crlf_and_bom() -> None:
    skill = parse("\ufeff---\r\ndescription: d\r\nalways: true\r\n---\r\n# B\r\ntext\r\n")
    assert skill.error is None
    assert skill.always
    assert skill.body == "# B\ntext"


# Broken frontmatter: listed, unavailable, never raising


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (skill_md("description: [unclosed"), "not valid YAML"),
        (skill_md("always: a: b"), "not valid YAML"),
        (skill_md("name: demo\ndescription: d\nalways: a: b"), "not valid YAML"),
        (skill_md("description: Use when: x\nrequires: {bins: [jq"), "not valid YAML"),
        (skill_md("date: 2024-13-45"), "not valid YAML"),
        (skill_md("description: !!python/object/apply:os.system [echo]"), "not valid YAML"),
        ("---\ndescription: d\n# Demo\n\nDo the thing.\n", "no closing '---'"),
        (skill_md("- a\n- b"), "mapping"),
        (skill_md("just text"), "mapping"),
        (skill_md("description: [a, b]"), "description"),
        (skill_md("description: 42"), "description"),
        (skill_md("description: d\nmetadata: '{not json'"), "JSON"),
        (skill_md("description: d\nmetadata: [1, 2]"), "metadata"),
        (skill_md('description: d\nmetadata: {"nanobot": "always"}'), "metadata.nanobot"),
        (skill_md("description: d\nrequires: ffmpeg"), "requires"),
        (skill_md("description: d\nrequires: {bins: [1, 2]}"), "requires.bins"),
        (skill_md('description: d\nmetadata: {"nanobot": {"requires": {"env": {"A": 1}}}}'), "env"),
        (skill_md('description: d\nmetadata: {"nanobot": {"always": "sometimes"}}'), "always"),
    ],
)
def test_broken_frontmatter_is_listed_with_an_error(text: str, fragment: str) -> None:
    skill = parse(text)
    assert skill.error is not None
    assert fragment in skill.error
    assert "\n" not in skill.error
    assert not skill.available
    assert not skill.always
    assert skill.location == "skills/demo/SKILL.md"
    assert skill.warning is None


def test_broken_yaml_keeps_body_and_description_from_it() -> None:
    skill = parse(skill_md("description: [oops\nalways: true"))
    assert skill.body == "# Demo\n\nDo the thing."
    assert skill.description == "Do the thing."
    assert "line" in (skill.error or "")


def test_broken_skill_is_summarised_with_its_error() -> None:
    skill = parse(skill_md("description: [oops"))
    (element,) = summary_elements(render_skills_summary([skill]))
    assert element.get("available") == "false"
    assert element.findtext("error") == skill.error
    assert element.find("requires") is None


# Frontmatter YAML rejects (skills from other agents): read leniently, usable, a warning

PDF_TOOLS = (
    "---\nname: pdf-tools\n"
    "description: Extract text from PDFs. Use when: the user uploads a PDF\n"
    "---\n# PDF tools\n\nRun pdftotext.\n"
)


def test_unquoted_colon_in_description_is_available_with_its_full_description() -> None:
    skills = load_skills({"skills/pdf-tools/SKILL.md": PDF_TOOLS}, {}, no_bins)
    pdf = next(skill for skill in skills if skill.name == "pdf-tools")
    assert pdf.available
    assert pdf.error is None
    assert pdf.missing == ()
    assert pdf.description == "Extract text from PDFs. Use when: the user uploads a PDF"
    assert pdf.body == "# PDF tools\n\nRun pdftotext."
    assert (
        '<skill available="true"><name>pdf-tools</name>'
        "<description>Extract text from PDFs. Use when: the user uploads a PDF</description>"
        "<location>skills/pdf-tools/SKILL.md</location></skill>"
    ) in render_skills_summary(skills)


@pytest.mark.parametrize(
    ("frontmatter", "description"),
    [
        ("description: 'It's here: read it'", "It's here: read it"),
        ('description: "Say "hi": twice"', 'Say "hi": twice'),
        ("description: Use when: a PDF\n  arrives by mail", "Use when: a PDF arrives by mail"),
        ("name: x: y\ndescription: Fine.", "Fine."),
        ("name: pdf: tools", "Do the thing."),
    ],
)
def test_name_and_description_yaml_rejects_are_read_as_plain_text(
    frontmatter: str, description: str
) -> None:
    skill = parse(skill_md(frontmatter))
    assert skill.error is None
    assert skill.available
    assert skill.description == description
    assert skill.warning is not None and "not valid YAML" in skill.warning


def test_quoted_description_with_a_colon_parses_strictly() -> None:
    skill = parse(skill_md('name: pdf-tools\ndescription: "Extract text. Use when: a PDF"'))
    assert skill.description == "Extract text. Use when: a PDF"
    assert skill.available
    assert skill.error is None
    assert skill.warning is None


def test_lenient_read_keeps_the_other_fields_and_checks_the_requirements() -> None:
    text = skill_md(
        "name: pdf-tools\ndescription: Extract text. Use when: a PDF arrives\n"
        'metadata: {"openclaw": {"always": true, "requires": {"bins": ["pdftotext"]}}}'
    )
    blocked = parse_skill("pdf-tools", text, "workspace", {}, no_bins)
    assert blocked.description == "Extract text. Use when: a PDF arrives"
    assert blocked.error is None
    assert blocked.warning is not None
    assert blocked.missing == ("bin:pdftotext",)
    assert not blocked.available
    assert blocked.always
    runs = parse_skill("pdf-tools", text, "workspace", {}, all_bins)
    assert runs.available
    assert runs.missing == ()


def test_lenient_read_warning_is_logged_once_and_kept_out_of_the_prompt(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _warn_once.cache_clear()  # other tests read the same skill in this process
    with caplog.at_level(logging.WARNING, logger="nanobot_lambda.core.skills"):
        skills = load_skills({"skills/pdf-tools/SKILL.md": PDF_TOOLS}, {}, no_bins)
        load_skills({"skills/pdf-tools/SKILL.md": PDF_TOOLS}, {}, no_bins)  # the next turn
    pdf = next(skill for skill in skills if skill.name == "pdf-tools")
    assert pdf.warning is not None
    assert "mapping values are not allowed here at line 3" in pdf.warning
    [record] = [r for r in caplog.records if r.name == "nanobot_lambda.core.skills"]
    assert record.levelno == logging.WARNING
    message = record.getMessage()
    assert "skills/pdf-tools/SKILL.md" in message
    assert pdf.warning in message
    assert "uploads a PDF" not in message
    assert "pdftotext" not in message
    summary = render_skills_summary(skills)
    assert "YAML" not in summary
    assert "mapping values" not in summary
    assert all(element.find("error") is None for element in summary_elements(summary))
    assert render_skills_summary(load_skills({"skills/pdf-tools/SKILL.md": PDF_TOOLS}, {})) == (
        summary
    )


@pytest.mark.parametrize(
    "requires",
    [
        "requires: {bins: [jq, null], env: [~]}",
        "requires:\n  bins: [jq, ~]\n  env: [null]",
        "metadata:\n  nanobot:\n    requires: {bins: [null, jq], env: [~]}",
        'metadata: {"openclaw": {"requires": {"bins": ["jq", null], "env": [null]}}}',
        'metadata: \'{"nanobot": {"requires": {"bins": [null, "jq"], "env": [null]}}}\'',
    ],
)
def test_null_entries_in_requires_are_ignored(requires: str) -> None:
    text = skill_md(f"description: Query JSON.\n{requires}")
    blocked = parse_skill("demo", text, "workspace", {}, no_bins)
    assert blocked.error is None
    assert blocked.description == "Query JSON."
    assert blocked.missing == ("bin:jq",)
    assert not blocked.available
    runs = parse_skill("demo", text, "workspace", {}, all_bins)
    assert runs.description == "Query JSON."
    assert runs.available
    assert runs.error is None


def test_requires_of_nulls_only_requires_nothing() -> None:
    skill = parse_skill(
        "demo",
        skill_md("description: d\nrequires: {bins: [~], env: [null]}"),
        "workspace",
        {},
        no_bins,
    )
    assert skill.available
    assert skill.description == "d"
    assert skill.missing == ()


@pytest.mark.parametrize(
    "frontmatter",
    [
        ": : :\n][",
        "{{{",
        "  name: demo\ndescription: d: e",
        "description: d: e\nalways: [true",
        "date: 2024-13-45\nfoo: a: b",
    ],
)
def test_frontmatter_unreadable_line_by_line_keeps_todays_behaviour(
    frontmatter: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="nanobot_lambda.core.skills"):
        skill = parse(skill_md(frontmatter))
    assert skill.error is not None and "not valid YAML" in skill.error
    assert skill.warning is None
    assert not skill.available
    assert skill.description == "Do the thing."
    (element,) = summary_elements(render_skills_summary([skill]))
    assert element.findtext("error") == skill.error
    assert not [r for r in caplog.records if r.name == "nanobot_lambda.core.skills"]


# Requirements


def test_requires_bins_uses_which() -> None:
    seen: list[str] = []

    def which(name: str) -> str | None:
        seen.append(name)
        return "/opt/bin/jq" if name == "jq" else None

    skill = parse_skill(
        "demo",
        skill_md('description: d\nmetadata: {"nanobot": {"requires": {"bins": ["jq", "ffmpeg"]}}}'),
        "builtin",
        {},
        which,
    )
    assert seen == ["jq", "ffmpeg"]
    assert skill.missing == ("bin:ffmpeg",)
    assert not skill.available


def test_requires_env_uses_environ_and_empty_is_missing() -> None:
    text = skill_md("description: d\nrequires:\n  env: [A, B, C]")
    skill = parse_skill("demo", text, "workspace", {"A": "x", "B": ""}, no_bins)
    assert skill.missing == ("env:B", "env:C")
    assert not skill.available
    ok = parse_skill("demo", text, "workspace", {"A": "x", "B": "y", "C": "z"}, no_bins)
    assert ok.available
    assert ok.missing == ()


def test_single_name_requirement_is_accepted() -> None:
    skill = parse_skill("demo", skill_md("requires: {bins: ffmpeg}"), "workspace", {}, no_bins)
    assert skill.missing == ("bin:ffmpeg",)
    assert skill.error is None


# Loading and overriding


def test_load_skills_overrides_builtin_with_workspace_skill() -> None:
    workspace = {
        "skills/weather/SKILL.md": skill_md("description: My weather.", "# Mine\n\nUse my API."),
        "skills/zeta/SKILL.md": skill_md("description: Z."),
        "skills/alpha/SKILL.md": skill_md("description: A."),
        "skills/alpha/references/notes.md": "not a skill",
        "skills/nested/deeper/SKILL.md": "not a skill either",
        "notes/SKILL.md": "elsewhere",
    }
    skills = load_skills(workspace, {}, no_bins)
    names = [skill.name for skill in skills]
    assert names == sorted(names)
    assert set(names) == {*BUILTINS, "alpha", "zeta"}
    weather = next(skill for skill in skills if skill.name == "weather")
    assert weather.source == "workspace"
    assert weather.location == "skills/weather/SKILL.md"
    assert weather.description == "My weather."
    assert weather.body == "# Mine\n\nUse my API."
    assert next(skill for skill in skills if skill.name == "cron").source == "builtin"


def test_load_skills_without_workspace_skills_gives_the_builtins() -> None:
    skills = load_skills({}, {}, no_bins)
    assert [skill.name for skill in skills] == list(BUILTINS)
    assert all(skill.source == "builtin" for skill in skills)


def test_every_builtin_skill_parses_cleanly() -> None:
    for skill in load_skills({}, {}, no_bins):
        assert skill.error is None, skill.name
        assert skill.available, skill.name
        assert skill.description, skill.name
        assert not skill.body.startswith("---"), skill.name
        assert skill.location == f"skills/{skill.name}/SKILL.md"
    by_name = {skill.name: skill for skill in load_skills({}, {}, no_bins)}
    assert by_name["memory"].always
    assert [name for name, skill in by_name.items() if skill.always] == ["memory"]


def test_skill_examples_in_builtin_skills_parse_cleanly() -> None:
    """An example SKILL.md the model copies must itself be valid."""
    examples = [
        block
        for text in builtin_skill_files().values()
        for block in re.findall(r"```\n(---\n.*?)```", text, re.DOTALL)
    ]
    assert examples
    for example in examples:
        skill = parse_skill("example", example, "workspace", {}, no_bins)
        assert skill.error is None, example
        assert skill.description


def test_memory_skill_is_short() -> None:
    memory = next(skill for skill in load_skills({}, {}, no_bins) if skill.name == "memory")
    assert len(memory.body.split()) <= 120
    assert "memory/MEMORY.md" in memory.body
    assert "memory/HISTORY.md" in memory.body


def test_builtin_skill_files_are_keyed_by_workspace_path() -> None:
    files = builtin_skill_files()
    assert files
    assert all(path.startswith("skills/") for path in files)
    for name in BUILTINS:
        assert f"skills/{name}/SKILL.md" in files
    assert all(isinstance(text, str) and text for text in files.values())
    files.clear()
    assert builtin_skill_files(), "callers get a copy"


# Rendering


def make(
    name: str,
    description: str = "d",
    *,
    always: bool = False,
    missing: tuple[str, ...] = (),
    error: str | None = None,
    body: str = "body",
) -> Skill:
    return Skill(
        name=name,
        description=description,
        location=f"skills/{name}/SKILL.md",
        base_dir=f"skills/{name}",
        source="workspace",
        always=always,
        available=not missing and error is None,
        missing=missing,
        body=body,
        error=error,
    )


def test_summary_empty_when_no_skills() -> None:
    assert render_skills_summary([]) == ""


def test_summary_format_is_compact() -> None:
    summary = render_skills_summary([make("b", "Second."), make("a", "First.")])
    assert summary == (
        texts.load("skills_preamble") + "\n<skills>\n"
        '<skill available="true"><name>a</name><description>First.</description>'
        "<location>skills/a/SKILL.md</location></skill>\n"
        '<skill available="true"><name>b</name><description>Second.</description>'
        "<location>skills/b/SKILL.md</location></skill>\n"
        "</skills>"
    )


def test_summary_escapes_xml() -> None:
    tricky_name = "a<b>&\"c'"
    tricky = make(tricky_name, "Use <tags> & \"quotes\" 'here'", error="bad <yaml> & more")
    summary = render_skills_summary([tricky])
    assert "<b>" not in summary.split("\n", 1)[1].replace("<skills>", "")
    assert "&lt;tags&gt; &amp;" in summary
    (element,) = summary_elements(summary)
    assert element.findtext("name") == tricky_name
    assert element.findtext("description") == "Use <tags> & \"quotes\" 'here'"
    assert element.findtext("location") == f"skills/{tricky_name}/SKILL.md"
    assert element.findtext("error") == "bad <yaml> & more"


def test_summary_drops_characters_xml_cannot_hold() -> None:
    (element,) = summary_elements(render_skills_summary([make("a", "bell\x07 here")]))
    assert element.findtext("description") == "bell here"


def test_summary_requires_only_when_unavailable() -> None:
    skills = [
        make("ok"),
        make("needs", missing=("bin:ffmpeg", "env:X")),
        Skill(**{**make("odd").__dict__, "missing": ("bin:ghost",)}),
    ]
    elements = {el.findtext("name"): el for el in summary_elements(render_skills_summary(skills))}
    assert elements["ok"].get("available") == "true"
    assert elements["ok"].find("requires") is None
    assert elements["needs"].get("available") == "false"
    assert elements["needs"].findtext("requires") == "bin:ffmpeg, env:X"
    assert elements["odd"].find("requires") is None
    assert all(el.find("error") is None for el in elements.values())


def test_summary_is_sorted_and_deterministic() -> None:
    skills = [make("zeta"), make("alpha"), make("mid", missing=("env:K",))]
    first = render_skills_summary(skills)
    again = render_skills_summary(list(reversed(skills)))
    assert first.encode() == again.encode()
    assert [el.findtext("name") for el in summary_elements(first)] == ["alpha", "mid", "zeta"]


def test_summary_of_builtins_is_deterministic_and_small() -> None:
    first = render_skills_summary(load_skills({}, {}, no_bins))
    second = render_skills_summary(load_skills({}, {}, no_bins))
    assert first == second
    assert len(first) < 2_000
    assert first.count("\n") == len(BUILTINS) + 2


def test_active_section_empty_when_nothing_is_always_on() -> None:
    assert render_active_skills([]) == ""
    assert render_active_skills([make("a"), make("b")]) == ""


def test_active_section_holds_available_always_on_bodies_only() -> None:
    active = render_active_skills(
        [
            make("zed", always=True, body="ZED BODY"),
            make("alpha", always=True, body="ALPHA BODY"),
            make("plain", body="PLAIN BODY"),
            make("blocked", always=True, missing=("bin:ffmpeg",), body="BLOCKED BODY"),
            make("broken", always=True, error="bad", body="BROKEN BODY"),
        ]
    )
    assert "ALPHA BODY" in active
    assert "ZED BODY" in active
    assert active.index("ALPHA BODY") < active.index("ZED BODY")
    for absent in ("PLAIN BODY", "BLOCKED BODY", "BROKEN BODY"):
        assert absent not in active
    assert "Base directory: skills/alpha — its relative paths start there" in active
    assert "Base directory: skills/zed" in active


def test_active_section_for_builtins_has_memory_without_frontmatter() -> None:
    skills = load_skills({}, {}, no_bins)
    active = render_active_skills(skills)
    memory = next(skill for skill in skills if skill.name == "memory")
    assert "Base directory: skills/memory — its relative paths start there" in active
    assert active.endswith(memory.body)
    assert "metadata:" not in active
    assert "\n---\n" not in active
    assert not active.startswith("---")
    assert render_active_skills(skills) == active


def test_parsed_always_on_skill_end_to_end() -> None:
    skills = load_skills(
        {
            "skills/habits/SKILL.md": skill_md(
                "description: Track habits.\nalways: true", "# Habits\n\nLog to habits.md."
            ),
            "skills/video/SKILL.md": skill_md(
                'description: Cut videos.\nmetadata: {"nanobot": {"always": true, '
                '"requires": {"bins": ["ffmpeg"]}}}',
                "# Video\n\nUse ffmpeg.",
            ),
        },
        {},
        no_bins,
    )
    active = render_active_skills(skills)
    assert "# Habits\n\nLog to habits.md." in active
    assert "Use ffmpeg." not in active
    assert "description:" not in active
    summary = render_skills_summary(skills)
    assert (
        '<skill available="false"><name>video</name><description>Cut videos.</description>'
        "<location>skills/video/SKILL.md</location><requires>bin:ffmpeg</requires></skill>"
    ) in summary
