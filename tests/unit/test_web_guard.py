"""web_fetch's address guard: a corpus of hostile URLs, each refused before any connection.

The resolver is injected, so host names that "resolve" to private addresses need no DNS, and
every socket connect is made to fail the test: a refusal must happen before the network.
"""

from __future__ import annotations

import ipaddress
import json
import re
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from nanobot_lambda.adapters.web.netguard import (
    AddressGuard,
    FetchError,
    FetchLimits,
    Refused,
    SafeFetcher,
    address_refusal,
)
from nanobot_lambda.core.errors import ConfigError
from nanobot_lambda.core.model import ToolCall
from nanobot_lambda.settings import AgentSettings
from nanobot_lambda.tools.web import WebFetch, is_readable_type
from tests.support.job_context import JobTools
from tests.support.settings import AGENT_ENV

# What the fake DNS knows. Public names resolve to documentation-free public addresses.
DNS = {
    "public.example": ["93.184.216.34"],
    "dual.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "localhost": ["127.0.0.1", "::1"],
    "intranet.example": ["10.1.2.3"],
    "metadata.example": ["169.254.169.254"],
    "mixed.example": ["93.184.216.34", "192.168.1.10"],  # one bad address spoils the name
    "v6private.example": ["fd12:3456::1"],
    "mapped.example": ["::ffff:127.0.0.1"],
    "cgnat.example": ["100.64.0.7"],
    "xn--bcher-kva.example": ["172.16.5.5"],  # bücher.example
}


def fake_resolver(host: str, port: int) -> list[str]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return DNS[host]


# (url, words the refusal must contain)
HOSTILE: list[tuple[str, str]] = [
    ("file:///etc/passwd", "only http:// and https://"),
    ("gopher://127.0.0.1:70/_GET", "only http:// and https://"),
    ("ftp://public.example/file", "only http:// and https://"),
    ("dict://127.0.0.1:11211/stats", "only http:// and https://"),
    ("javascript:alert(1)", "only http:// and https://"),
    ("data:text/html,<h1>hi</h1>", "only http:// and https://"),
    ("//public.example/no-scheme", "only http:// and https://"),
    ("http://127.0.0.1/", "loopback"),
    ("http://127.1/", "loopback"),
    ("http://[::1]/", "loopback"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://0/", "unspecified"),
    ("http://[::]/", "unspecified"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://[::ffff:169.254.169.254]/latest/meta-data/", "link-local"),
    ("http://[::ffff:7f00:1]/", "loopback"),
    ("http://[::127.0.0.1]/", "reserved"),
    ("http://[64:ff9b::a9fe:a9fe]/", "link-local"),  # NAT64 of 169.254.169.254
    ("http://[2002:c0a8:101::1]/", "private"),  # 6to4 of 192.168.1.1
    ("http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "Teredo"),
    ("http://2130706433/", "loopback"),  # decimal 127.0.0.1
    ("http://0x7f.1/", "loopback"),  # hex
    ("http://0x7f000001/", "loopback"),
    ("http://0177.0.0.1/", "loopback"),  # octal
    ("http://017700000001/", "loopback"),
    ("http://0251.0376.0251.0376/", "link-local"),  # octal 169.254.169.254
    ("http://2852039166/", "link-local"),  # decimal 169.254.169.254
    ("http://localhost/", "loopback"),
    ("http://localhost./", "loopback"),
    ("http://LOCALHOST:8080/admin", "loopback"),
    ("http://10.0.0.1/", "private"),
    ("http://10.255.255.255:8080/", "private"),
    ("http://172.16.0.1/", "private"),
    ("http://172.31.255.254/", "private"),
    ("http://192.168.0.1/", "private"),
    ("http://100.64.0.1/", "carrier-grade NAT"),
    ("http://100.127.255.254/", "carrier-grade NAT"),
    ("http://192.0.2.10/", "documentation"),
    ("http://198.51.100.7/", "documentation"),
    ("http://203.0.113.9/", "documentation"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://192.0.0.8/", "IETF protocol"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "broadcast"),
    ("http://224.0.0.1/", "multicast"),
    ("http://239.255.255.250:1900/", "multicast"),
    ("http://[fc00::1]/", "unique-local"),
    ("http://[fd00:ec2::254]/", "unique-local"),  # AWS's IPv6 metadata endpoint
    ("http://[fe80::1]/", "link-local"),
    ("http://[fec0::1]/", "site-local"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[100::1]/", "discard-only"),
    ("http://[fe80::1%25eth0]/", "zone"),
    ("http://intranet.example/", "intranet.example resolves to 10.1.2.3"),
    ("http://metadata.example/latest/meta-data/", "link-local"),
    ("http://mixed.example/", "mixed.example resolves to 192.168.1.10"),
    ("http://v6private.example/", "unique-local"),
    ("http://mapped.example/", "loopback"),
    ("http://cgnat.example/", "carrier-grade NAT"),
    ("http://bücher.example/", "xn--bcher-kva.example resolves to 172.16.5.5"),
    ("http://user:pass@public.example/", "credentials"),
    ("http://public.example@127.0.0.1/", "credentials"),
    ("http://:@public.example/", "credentials"),
    ("http://public.example\\@127.0.0.1/", "backslashes"),
    ("http://public.example/a b", "spaces"),
    ("http://public.example/\r\nX-Injected: 1", "control characters"),
    ("http://public.example:22/", "port 22"),
    ("http://public.example:25/", "port 25"),
    ("http://public.example:0/", "port 0"),
    ("http://public.example:99999/", "not valid"),
    ("http://public.example:http/", "not valid"),
    ("http://%31%32%37.0.0.1/", "neither a host name nor a valid IPv4 address"),
    ("http://%6c%6f%63%61%6c%68%6f%73%74/", "not a valid host name"),  # localhost, encoded
    ("http://1.2.3.4.5/", "neither a host name nor a valid IPv4 address"),
    ("http://256.1.1.1/", "neither a host name nor a valid IPv4 address"),
    ("http://08.1.1.1/", "neither a host name nor a valid IPv4 address"),
    ("http://example.123/", "neither a host name nor a valid IPv4 address"),
    ("http://exa_mple$.com/", "not a valid host name"),
    ("http://[::1/", "not valid"),
    ("http:///path-only", "no host"),
    ("http://public.example/" + "a" * 2100, "longer than 2048"),
]


@pytest.fixture
def no_connections(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fail any attempt to open a connection; the list records the attempts."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, address: Any) -> None:
        attempts.append(address)
        raise AssertionError(f"a connection to {address} was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    yield attempts
    assert attempts == []


def fetcher(**kwargs: Any) -> SafeFetcher:
    return SafeFetcher(AddressGuard(resolver=fake_resolver, **kwargs), FetchLimits())


def test_the_corpus_is_large_enough() -> None:
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize(("url", "reason"), HOSTILE, ids=[url[:60] for url, _ in HOSTILE])
def test_hostile_url_is_refused_before_any_connection(
    url: str, reason: str, no_connections: list[Any]
) -> None:
    with pytest.raises(Refused) as refused:
        fetcher().get(url)
    assert reason in str(refused.value)


@pytest.mark.parametrize(("url", "reason"), HOSTILE[::7], ids=[url[:60] for url, _ in HOSTILE[::7]])
def test_the_tool_reports_a_refusal_to_the_model(
    url: str, reason: str, no_connections: list[Any]
) -> None:
    registry = JobTools([WebFetch(fetcher())])
    result = registry.execute(ToolCall("1", "web_fetch", json.dumps({"url": url})))
    assert result.startswith("Error: refused: ")
    assert reason in result


def test_a_name_that_does_not_resolve_is_a_clear_failure(no_connections: list[Any]) -> None:
    with pytest.raises(FetchError, match="could not be resolved"):
        fetcher().get("http://nowhere.example/")


def test_public_names_and_addresses_pass_the_guard() -> None:
    guard = AddressGuard(resolver=fake_resolver)
    target = guard.check("https://Public.Example/path?q=1#fragment")
    assert (target.scheme, target.host, target.port) == ("https", "public.example", 443)
    assert target.request_target == "/path?q=1"
    assert target.addresses == ("93.184.216.34",)
    assert target.url == "https://public.example/path?q=1"
    assert guard.check("http://dual.example:8080/").addresses == (
        "93.184.216.34",
        "2606:2800:220:1:248:1893:25c8:1946",
    )
    assert guard.check("http://dual.example:8080/").host_header == "dual.example:8080"
    assert guard.check("http://[2606:4700:4700::1111]/").host_header == "[2606:4700:4700::1111]"


def test_numeric_hosts_are_read_as_browsers_read_them() -> None:
    guard = AddressGuard(resolver=fake_resolver)
    assert guard.check("http://134744072/").addresses == ("8.8.8.8",)
    assert guard.check("http://0x8.0x8.0x8.0x8/").host == "8.8.8.8"
    assert guard.check("http://8.526344/").host == "8.8.8.8"


@pytest.mark.parametrize(
    "address",
    ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"],
)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_refusal(ipaddress.ip_address(address)) is None


def test_allowed_networks_exempt_addresses_not_names() -> None:
    allowed = [ipaddress.ip_network("10.0.0.0/8"), ipaddress.ip_network("127.0.0.0/8")]
    assert address_refusal(ipaddress.ip_address("10.1.2.3"), allowed) is None
    assert address_refusal(ipaddress.ip_address("::ffff:10.1.2.3"), allowed) is None
    assert address_refusal(ipaddress.ip_address("192.168.1.1"), allowed) == "a private address"
    guard = AddressGuard(allowed, resolver=fake_resolver)
    assert guard.check("http://intranet.example/").addresses == ("10.1.2.3",)
    with pytest.raises(Refused, match="link-local"):
        guard.check("http://metadata.example/")


NON_DESTINATIONS = ["0.0.0.0", "255.255.255.255", "224.0.0.251", "::", "ff02::1"]  # noqa: S104


@pytest.mark.parametrize("address", NON_DESTINATIONS)
def test_no_exemption_makes_non_destinations_reachable(address: str) -> None:
    everything = [ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")]
    assert address_refusal(ipaddress.ip_address(address), everything) is not None


@pytest.mark.parametrize(
    ("media_type", "readable"),
    [
        ("text/html", True),
        ("application/xhtml+xml", True),
        ("text/plain", True),
        ("text/markdown", True),
        ("application/json", True),
        ("application/ld+json", True),
        ("application/xml", True),
        ("application/rss+xml", True),
        ("application/pdf", False),
        ("application/octet-stream", False),
        ("image/svg+xml", False),
        ("image/png", False),
        ("video/mp4", False),
        ("application/zip", False),
    ],
)
def test_only_textual_types_are_read(media_type: str, readable: bool) -> None:
    assert is_readable_type(media_type) is readable


# -- configuration ---------------------------------------------------------------------------


def test_web_settings_parse_networks_and_take_the_key_from_a_reference() -> None:
    fetched: list[tuple[str, str]] = []

    def fetch(kind: str, reference: str) -> str:
        fetched.append((kind, reference))
        return "search-key-from-ssm"

    settings = AgentSettings.from_env(
        {
            **AGENT_ENV,
            "WEB_SEARCH_PROVIDER": "tavily",
            "WEB_SEARCH_API_KEY_PARAM": "/nanobot/web-search-key",
            "WEB_FETCH_ALLOW_NETWORKS": " 10.20.0.0/16, fd00::/8 ,",
        },
        fetch=fetch,
    )
    assert fetched == [("param", "/nanobot/web-search-key")]
    assert settings.web_search_provider == "tavily"
    assert settings.web_search_api_key is not None
    assert settings.web_search_api_key.get_secret_value() == "search-key-from-ssm"
    assert "search-key-from-ssm" not in repr(settings)
    assert settings.web_fetch_allow_networks == (
        ipaddress.ip_network("10.20.0.0/16"),
        ipaddress.ip_network("fd00::/8"),
    )


def test_web_settings_default_to_no_search_and_public_addresses_only() -> None:
    settings = AgentSettings.from_env(
        {**AGENT_ENV, "WEB_SEARCH_PROVIDER": "", "WEB_FETCH_ALLOW_NETWORKS": ""}
    )
    assert settings.web_search_provider is None and settings.web_search_api_key is None
    assert settings.web_fetch_allow_networks == ()
    assert (settings.web_fetch_max_bytes, settings.web_fetch_timeout_seconds) == (2_000_000, 15)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("WEB_FETCH_ALLOW_NETWORKS", "10.0.0.1/8", "'10.0.0.1/8' is not a network in CIDR form"),
        ("WEB_FETCH_ALLOW_NETWORKS", "intranet.example", "is not a network in CIDR form"),
        ("WEB_SEARCH_PROVIDER", "google", "WEB_SEARCH_PROVIDER: Input should be 'brave' or"),
        ("WEB_SEARCH_API_BASE", "ftp://search", "WEB_SEARCH_API_BASE"),
        ("WEB_FETCH_TIMEOUT_SECONDS", "0", "WEB_FETCH_TIMEOUT_SECONDS"),
    ],
)
def test_bad_web_settings_fail_at_start_up(variable: str, value: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        AgentSettings.from_env({**AGENT_ENV, variable: value})
