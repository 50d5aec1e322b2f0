"""The console's page in a real headless Chromium (tests/support/browser.py), on the local stack:
opened with launch data signed as Telegram signs it, as the owner and as a person.

One browser and one stack for the module (Pairing=on); each test leaves what it made behind,
so each works in data of its own (its own text, its own job, its own asker).
"""

from __future__ import annotations

import json
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import boto3
import pytest

from nanobot_lambda.adapters.aws.inbound_events import DynamoHookStore
from nanobot_lambda.adapters.aws.jobs import DynamoJobStore
from nanobot_lambda.adapters.aws.schedules import EventBridgeSchedules
from nanobot_lambda.adapters.aws.usage import DynamoUsageStore
from nanobot_lambda.core import inbound_events, launch_data
from nanobot_lambda.core.cron import CronJob
from nanobot_lambda.core.inbound_events import new_hook
from nanobot_lambda.core.usage_counts import Tally
from nanobot_lambda.operator.local.stack import LocalStack, LocalTelegram, LocalUser
from tests.conftest import TEMPLATE
from tests.support.browser import Browser
from tests.support.scripted_model import ScriptedModelServer

OWNER = LocalUser().id
ADA = {"id": 111111111, "first_name": "Ada"}  # allowed; a person, not the owner
BOB = 222222222  # a stranger who asks to pair


@pytest.fixture(scope="module")
def model_server() -> Iterator[ScriptedModelServer]:
    server = ScriptedModelServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def stack(moto_endpoint: str, model_server: ScriptedModelServer) -> Iterator[LocalStack]:
    local = LocalStack(
        TEMPLATE,
        model_env=model_server.env(),
        endpoint_url=moto_endpoint,
        telegram=LocalTelegram(allow_from=f"{OWNER},111111111"),
        parameters={"Pairing": "on", "SpendLimitPersonDailyUsd": "1"},
    ).start()
    yield local
    local.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    started = Browser()
    yield started
    started.close()
    assert started.errors == []  # no script error, no CSP refusal, in any test


def opened(stack: LocalStack, tab: str = "memory", user: dict[str, Any] | None = None) -> str:
    url = stack.console_launch_url(user)
    assert url is not None
    return f"{url}&tab={tab}"


def test_the_owner_edits_memory_and_the_next_turn_s_prompt_carries_it_then_restores(
    stack: LocalStack, browser: Browser, model_server: ScriptedModelServer
) -> None:
    with browser.page(opened(stack)) as page:
        editor = page.locator("#memory-text")
        before = editor.input_value()
        editor.fill(before + "\n- Takes her tea with lemon (from the console).\n")
        page.click("#tg-main-button")  # the MainButton: "Save MEMORY.md"
        page.wait_for_selector("#notice.success")
        model_server.reply("Lemon it is.")
        stack.post_update(stack.text_update("Tea?"))
        stack.process_queue()
        prompt = model_server.requests[-1]["messages"][0]["content"]
        assert "Takes her tea with lemon (from the console)." in prompt
        assert "notification:success" in page.evaluate("window.__haptics")  # haptic feedback

        # Restore the version before the edit, with one press.
        page.click("#tab-memory")
        page.wait_for_selector("#view[data-ready=memory] details[data-version='2']")
        page.click("details[data-version='2'] summary")
        page.click("details[data-version='2'] button[data-restore]")
        page.wait_for_selector("#notice.success")
        page.wait_for_selector("#view[data-ready=memory]")
        assert page.locator("#memory-text").input_value() == before
    memory = stack.workspace.read("memory/MEMORY.md", fresh=True)
    assert memory is not None and b"lemon" not in memory.data


def test_a_concurrent_write_is_never_lost_and_the_editor_says_so(
    stack: LocalStack, browser: Browser
) -> None:
    with browser.page(opened(stack)) as page:
        current = stack.workspace.read("memory/MEMORY.md", fresh=True)
        assert current is not None
        # A turn writes MEMORY.md while the editor is open.
        stack.workspace.write(
            "memory/MEMORY.md",
            current.data + b"- Written by a turn meanwhile.\n",
            if_match=current.etag,
        )
        page.locator("#memory-text").fill("My edit of an old version.")
        page.click("#tg-main-button")
        page.wait_for_selector("#notice.error")
        assert "changed since you opened it" in page.inner_text("#notice")
        assert "Written by a turn meanwhile." in page.inner_text("#memory-current")
        assert page.locator("#memory-text").input_value() == "My edit of an old version."
    memory = stack.workspace.read("memory/MEMORY.md", fresh=True)
    assert memory is not None and b"Written by a turn meanwhile." in memory.data


def test_the_owner_approves_a_pairing_request(stack: LocalStack, browser: Browser) -> None:
    update = stack.text_update("hello?", chat_id=BOB)
    update["message"]["from"] = {"id": BOB, "is_bot": False, "first_name": "Bob"}
    update["message"]["chat"] = {"id": BOB, "type": "private", "first_name": "Bob"}
    stack.post_update(update)  # the webhook answers Bob with a code
    with browser.page(opened(stack, "people")) as page:
        page.wait_for_selector("li[data-code] button[data-approve]")
        page.click("li[data-code] button[data-approve]")
        page.wait_for_selector("#notice.success")
        page.wait_for_selector("#view[data-ready=people] li[data-person='222222222']")
    welcomed = [m.plain_text for m in stack.bot_api.messages if m.chat_id == BOB]
    assert welcomed[-1] == "The owner approved you: you can write to me now."


def test_the_owner_deletes_a_cron_job(stack: LocalStack, browser: Browser) -> None:
    refs = stack.template.refs
    jobs = DynamoJobStore(refs["JobsTable"], boto3.client("dynamodb"))
    scheduler = boto3.client("scheduler")
    schedules = EventBridgeSchedules(
        scheduler,
        group=refs["ScheduleGroup"],
        target_arn=stack.environment["agent_turn"]["SCHEDULER_TARGET_ARN"],
        role_arn=stack.environment["agent_turn"]["SCHEDULER_ROLE_ARN"],
    )
    job = CronJob(
        job_id="c0ffee01",
        chat_id=OWNER,
        kind="reminder",
        message="Water the plants",
        name="plants",
        expression="cron(0 9 * * ? *)",
        timezone="UTC",
        description="every day at 9:00",
        one_time=False,
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )
    jobs.put(job)  # as the cron tool makes one: the job, then its schedule
    schedules.create(job)
    with browser.page(opened(stack, "schedules")) as page:
        page.wait_for_selector("li[data-job='c0ffee01']")
        assert "plants" in page.inner_text("li[data-job='c0ffee01']")
        page.click("li[data-job='c0ffee01'] button[data-delete]")
        page.wait_for_selector("#notice.success")
        page.wait_for_selector("#view[data-ready=schedules]")
        assert page.locator("li[data-job='c0ffee01']").count() == 0
    assert jobs.get(OWNER, "c0ffee01") is None
    names = [
        s["Name"] for s in scheduler.list_schedules(GroupName=refs["ScheduleGroup"])["Schedules"]
    ]
    assert job.schedule_name not in names


def test_the_owner_pauses_the_heartbeat_sees_a_hook_s_refused_delivery_and_skills_checked(
    stack: LocalStack, browser: Browser, model_server: ScriptedModelServer
) -> None:
    jobs = DynamoJobStore(stack.template.refs["JobsTable"], boto3.client("dynamodb"))
    with browser.page(opened(stack, "schedules")) as page:
        page.click("#heartbeat-switch")  # "Pause"
        page.wait_for_selector("#notice.success")
        page.wait_for_selector("#view[data-ready=schedules] #heartbeat-switch")
        assert jobs.heartbeat_paused()
        assert page.inner_text("#heartbeat-switch") == "Resume"
        page.click("#heartbeat-switch")
        page.wait_for_selector("#notice.success")
        page.wait_for_selector("#view[data-ready=schedules] #heartbeat-switch")
        assert not jobs.heartbeat_paused()

    hooks = DynamoHookStore(stack.template.refs["SessionsTable"], lambda: boto3.client("dynamodb"))
    assert hooks.add(
        new_hook("builds", OWNER, None, quiet=False, now=datetime.now(UTC), created_by=OWNER)
    )
    now = int(time.time())
    forged = {
        "X-Hook-Timestamp": str(now),
        "X-Hook-Signature": inbound_events.sign("guess", b"{}", now),
    }
    assert stack.post_hook("builds", b"{}", forged)["statusCode"] == 401
    with browser.page(opened(stack, "hooks")) as page:
        page.click("li[data-hook='builds'] button[data-show-deliveries]")
        page.wait_for_selector("[data-deliveries='builds'] .delivery[data-outcome='refused']")
        assert "refused (401: wrong signature)" in page.inner_text("[data-deliveries='builds']")

    skill = "---\nname: shell\ndescription: Uses sh.\nrequires:\n  bins: [sh]\n---\nDo it.\n"
    stack.workspace.write("skills/shell/SKILL.md", skill.encode())
    model_server.reply("Hello.")
    stack.post_update(stack.text_update("Hi"))  # a turn: agent_turn records what it checks
    stack.process_queue()
    with browser.page(opened(stack, "skills")) as page:
        page.wait_for_selector("#view[data-ready=skills]")
        assert page.inner_text("[data-skill-status='shell']") == "on · bin:sh ✓"
        assert "the code sandbox's programs" in page.inner_text("#skills-checked")


def test_the_spending_chart_is_drawn_with_the_recorded_figures(
    stack: LocalStack, browser: Browser
) -> None:
    usage = DynamoUsageStore(
        stack.template.refs["SessionsTable"], boto3.client("dynamodb"), timezone="UTC"
    )
    now = datetime.now(UTC)
    recorded = {now - timedelta(days=2): "0.25", now - timedelta(days=5): "0.75"}
    for day, cost in recorded.items():
        usage.add(OWNER, Tally(turns=1, model_calls=1, cost_usd=Decimal(cost)), day)
    with browser.page(opened(stack, "spending")) as page:
        bars = page.locator("#chart-days rect.bar")
        assert bars.count() == 31
        drawn = {
            bars.nth(i).get_attribute("data-period"): float(bars.nth(i).get_attribute("data-cost"))
            for i in range(31)
        }
        for day, cost in recorded.items():
            assert drawn[f"{day:%Y-%m-%d}"] >= float(cost)  # a turn of this test may add to it
        assert drawn[f"{now - timedelta(days=3):%Y-%m-%d}"] == 0
        # The person's daily limit (SpendLimitPersonDailyUsd=1) is the chart's dashed line.
        assert page.locator("#chart-days line.limit").get_attribute("data-limit") == "1"


def test_a_turn_s_model_tokens_cost_and_tools_show_in_spending_and_activity(
    stack: LocalStack, browser: Browser, model_server: ScriptedModelServer
) -> None:
    model_server.response_model = "gpt-4o-mini"  # a model litellm has a price for
    try:
        model_server.call_tool("list_dir", {"path": "."}, prompt_tokens=900, completion_tokens=10)
        model_server.reply("Three files.", prompt_tokens=1100, completion_tokens=25)
        stack.post_update(stack.text_update("What files do I have?"))
        stack.process_queue()
    finally:
        model_server.response_model = None
    model = ScriptedModelServer.MODEL
    with browser.page(opened(stack, "spending")) as page:
        row = page.locator(f"#spend-models tr[data-model='{model}']")
        row.wait_for()
        assert "$0.0" in row.inner_text() and "calls" in row.inner_text()
        assert page.locator(f"#spend-everyone-models tr[data-model='{model}']").count() == 1
    with browser.page(opened(stack, "activity")) as page:
        page.wait_for_selector("#turns tr")
        shown = page.locator("#turns tr").first.inner_text()
        assert model in shown and "2035 tokens" in shown and "list_dir" in shown
        assert "What files" not in page.inner_text("#view")
    with browser.page(opened(stack, "spending", user=ADA)) as page:
        page.wait_for_selector("#view[data-ready=spending]")
        assert page.locator("#spend-models").count() == 0  # the owner's models are not Ada's
        assert page.locator("#spend-everyone-models").count() == 0


def test_a_person_sees_only_their_scope_in_the_page_and_at_the_api(
    stack: LocalStack, browser: Browser
) -> None:
    stack.workspace.write("USER.md", b"# User\n")
    owner_memory = stack.workspace.read("memory/MEMORY.md", fresh=True)
    assert owner_memory is not None
    with browser.page(opened(stack, user=ADA)) as page:
        tabs = page.locator("nav button").all_inner_texts()
        assert tabs == ["Memory", "Schedules", "Models", "Spending"]
        assert page.locator("#scope").count() == 0  # no other scope to choose
        assert "Written by a turn meanwhile." not in page.locator("#memory-text").input_value()
        # The page's own request, with the owner's scope asked for: refused.
        status = page.evaluate(
            """async () => (await fetch(location.pathname + "/api/memory", {method: "POST",
                 headers: {"Authorization": "tma " + Telegram.WebApp.initData},
                 body: JSON.stringify({scope: "owner"})})).status"""
        )
        assert status == 403


def test_forged_and_expired_launch_data_are_refused(stack: LocalStack, browser: Browser) -> None:
    url = stack.console_launch_url()
    assert url is not None
    base, fragment = url.split("#", 1)
    launch = urllib.parse.parse_qs(fragment)["tgWebAppData"][0]
    forged = launch.replace("hash=", "hash=0")
    fields = dict(urllib.parse.parse_qsl(launch))
    fields.pop("hash")
    fields["auth_date"] = str(int(time.time()) - 3 * 3600)
    expired = launch_data.sign(fields, stack.bot_token)
    for refused in (forged, expired):
        address = f"{base}#{urllib.parse.urlencode({'tgWebAppData': refused})}"
        with browser.page(address, ready="#signed-out") as page:
            assert "open it from the bot again" in page.inner_text("#signed-out")
            assert page.locator("nav").count() == 0
    with browser.page(base, ready="#signed-out") as page:  # no launch data at all
        assert "Open the console from the bot in Telegram" in page.inner_text("#signed-out")


def test_the_page_is_small_and_allows_only_its_own_script(stack: LocalStack) -> None:
    assert stack.console_url is not None
    request = urllib.request.Request(stack.console_url, headers={"Accept-Encoding": "gzip"})  # noqa: S310
    with urllib.request.urlopen(request, timeout=30) as answer:  # noqa: S310 - 127.0.0.1
        body = answer.read()
        policy = answer.headers["Content-Security-Policy"]
        assert answer.headers["Content-Encoding"] == "gzip"
    assert len(body) < 150_000
    assert "default-src 'none'" in policy and "'unsafe-inline'" not in policy
    assert json.dumps(policy).count("sha256-") == 2  # its script and its style, by hash
