"""What the agent may fetch from the web, and an HTTP GET that cannot be steered inside the network.

`AddressGuard.check(url)` parses a URL the model wrote, refuses what could reach something other
than a public web server (other schemes, credentials, odd ports, numeric host tricks, and every
private, loopback, link-local, multicast, reserved or otherwise special address, also when
embedded in an IPv6 address), resolves the host once and checks every address it resolves to.

`SafeFetcher.get(url)` then connects to an address that was checked, never resolving the name
again (so DNS rebinding cannot swap in an internal address), while the Host header, TLS SNI and
certificate verification use the real host name. Every redirect goes through the same check.
The body is read up to a byte cap, and a watchdog shuts the socket down when the total time is
up: socket timeouts bound each read, not their sum, so a server dripping bytes could hold a
fetch for ever without it.

Operators may exempt networks (an intranet) with `allow_networks`; names are never exempted.
"""

from __future__ import annotations

import contextlib
import ipaddress
import logging
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit

import certifi
import idna
from urllib3 import HTTPConnectionPool, HTTPResponse, HTTPSConnectionPool, Timeout
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import (
    ConnectTimeoutError,
    HTTPError,
    NewConnectionError,
    ReadTimeoutError,
    SSLError,
)

logger = logging.getLogger(__name__)

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]
"""(host name, port) -> the addresses it resolves to, as text."""

MAX_URL_LENGTH = 2048
DEFAULT_PORTS = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
CONNECT_TIMEOUT_SECONDS = 5.0
CHUNK_BYTES = 16_384
USER_AGENT = "nanobot-lambda/0.1 (web_fetch)"


class FetchError(Exception):
    """The fetch failed (network, timeout, HTTP status). The message is for the model."""


class Refused(FetchError):
    """The URL or an address it leads to is not allowed. The message is for the model."""


def _networks(*rows: tuple[str, str]) -> tuple[tuple[IPNetwork, str], ...]:
    return tuple((ipaddress.ip_network(cidr), label) for cidr, label in rows)


# Never reachable, whatever the operator exempts: these are not destinations.
ALWAYS_BLOCKED = _networks(
    ("0.0.0.0/8", "an unspecified ('this network') address"),
    ("255.255.255.255/32", "the broadcast address"),
    ("224.0.0.0/4", "a multicast address"),
    ("::/128", "the unspecified address"),
    ("ff00::/8", "a multicast address"),
)
# The IANA special-purpose registries (IPv4 and IPv6). Anything else that Python does not
# consider global, and every IPv6 address outside 2000::/3, is refused too.
BLOCKED = _networks(
    ("10.0.0.0/8", "a private address"),
    ("100.64.0.0/10", "a carrier-grade NAT (shared) address"),
    ("127.0.0.0/8", "a loopback address"),
    ("169.254.0.0/16", "a link-local address, where cloud metadata lives"),
    ("172.16.0.0/12", "a private address"),
    ("192.0.0.0/24", "an IETF protocol address"),
    ("192.0.2.0/24", "a documentation address"),
    ("192.31.196.0/24", "an AS112 address"),
    ("192.52.193.0/24", "an AMT address"),
    ("192.88.99.0/24", "a 6to4 relay address"),
    ("192.168.0.0/16", "a private address"),
    ("192.175.48.0/24", "an AS112 address"),
    ("198.18.0.0/15", "a benchmarking address"),
    ("198.51.100.0/24", "a documentation address"),
    ("203.0.113.0/24", "a documentation address"),
    ("240.0.0.0/4", "a reserved address"),
    ("::1/128", "a loopback address"),
    ("::/8", "a reserved (IPv4-compatible or translated) address"),
    ("64:ff9b:1::/48", "a local-use NAT64 address"),
    ("100::/64", "a discard-only address"),
    ("2001::/23", "an IETF protocol address (Teredo included)"),
    ("2001:db8::/32", "a documentation address"),
    ("3fff::/20", "a documentation address"),
    ("5f00::/16", "a segment-routing address"),
    ("fc00::/7", "a unique-local (private) address"),
    ("fe80::/10", "a link-local address"),
    ("fec0::/10", "a site-local address"),
)
GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")
NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")
SIX_TO_FOUR = ipaddress.ip_network("2002::/16")

_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST_NAME = re.compile(rf"(?=.{{1,253}}$){_LABEL}(?:\.{_LABEL})*")
_NUMERIC_LABEL = re.compile(r"0x[0-9a-f]*|[0-9]+")
_UNSAFE_CHARACTERS = re.compile(r"[\x00-\x20\x7f\\]")


def resolve_host(host: str, port: int) -> list[str]:
    """The system resolver: every address `host` resolves to, in the resolver's order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def address_refusal(address: IPAddress, allowed: Iterable[IPNetwork] = ()) -> str | None:
    """Why `address` may not be reached (e.g. "a loopback address"), or None if it may."""
    allowed = tuple(allowed)
    if isinstance(address, ipaddress.IPv6Address):
        address = ipaddress.IPv6Address(int(address))  # without a scope id
        embedded = address.ipv4_mapped or _embedded_ipv4(address)
        if embedded is not None and not any(address in network for network in allowed):
            reason = address_refusal(embedded, allowed)
            return f"{reason} ({embedded} inside an IPv6 address)" if reason else None
    for network, label in ALWAYS_BLOCKED:
        if address in network:
            return label
    if any(address in network for network in allowed):
        return None
    for network, label in BLOCKED:
        if address in network:
            return label
    if isinstance(address, ipaddress.IPv6Address) and address not in GLOBAL_UNICAST_V6:
        return "not a global unicast address"
    if not address.is_global:
        return "not a public address"
    return None


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a NAT64 (well-known prefix) or 6to4 address leads to."""
    if address in NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in SIX_TO_FOUR:
        return address.sixtofour
    return None


@dataclass(frozen=True)
class Target:
    """A checked URL: where to connect (`addresses`, all allowed) and what to ask for."""

    url: str  # without credentials or fragment
    scheme: str
    host: str  # ASCII host name or canonical IP text (no brackets)
    port: int
    request_target: str  # path and query
    addresses: tuple[str, ...]

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return host if self.port == DEFAULT_PORTS[self.scheme] else f"{host}:{self.port}"


class AddressGuard:
    def __init__(
        self, allow_networks: Sequence[IPNetwork] = (), resolver: Resolver = resolve_host
    ) -> None:
        self._allowed = tuple(allow_networks)
        self._resolve = resolver

    def check(self, url: str) -> Target:
        """The URL as a Target whose every address is allowed; Refused says why it is not."""
        scheme, host, literal, port, request_target = _parse(url)
        if literal is not None:
            addresses = [literal]
        else:
            try:
                found = self._resolve(host, port)
            except (OSError, UnicodeError):
                raise FetchError(f"the host {host} could not be resolved.") from None
            if not found:
                raise FetchError(f"the host {host} could not be resolved.")
            addresses = [_address(text, host) for text in found]
        for address in addresses:
            reason = address_refusal(address, self._allowed)
            if reason is not None:
                shown = host if literal is not None else f"{host} resolves to {address}, which"
                raise Refused(
                    f"{shown} is {reason}; only public internet addresses can be fetched."
                )
        netloc = f"[{host}]" if ":" in host else host
        if port != DEFAULT_PORTS[scheme]:
            netloc += f":{port}"
        return Target(
            url=f"{scheme}://{netloc}{request_target}",
            scheme=scheme,
            host=host,
            port=port,
            request_target=request_target,
            addresses=tuple(str(address) for address in addresses),
        )


def _address(text: str, host: str) -> IPAddress:
    try:
        return ipaddress.ip_address(text.split("%")[0])
    except ValueError:
        raise FetchError(f"the host {host} resolved to something that is not an address.") from None


def _parse(url: str) -> tuple[str, str, IPAddress | None, int, str]:
    """(scheme, host, the host as an address if it is one, port, path and query)."""
    if len(url) > MAX_URL_LENGTH:
        raise Refused(f"the URL is longer than {MAX_URL_LENGTH} characters.")
    url = url.strip()
    if _UNSAFE_CHARACTERS.search(url):
        raise Refused("the URL contains spaces, control characters or backslashes; encode them.")
    try:
        parts = urlsplit(url)
        port = parts.port
        hostname = parts.hostname or ""
    except ValueError as error:
        raise Refused(f"the URL is not valid ({error}).") from None
    scheme = parts.scheme.lower()
    if scheme not in DEFAULT_PORTS:
        got = f"{scheme}:" if scheme else "no scheme"
        raise Refused(f"only http:// and https:// URLs are fetched (got {got}).")
    if "@" in parts.netloc:
        raise Refused("URLs with credentials (user:password@host) are not fetched.")
    if not hostname:
        raise Refused("the URL has no host.")
    host, literal = _host(hostname, bracketed=parts.netloc.startswith("["))
    port = DEFAULT_PORTS[scheme] if port is None else port
    if port not in (80, 443) and port < 1024:
        raise Refused(f"port {port} is not for the web; only 80, 443 and 1024-65535 are allowed.")
    request_target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return scheme, host, literal, port, request_target


def _host(hostname: str, bracketed: bool) -> tuple[str, IPAddress | None]:
    """The host as ASCII text, and as an address when it is one (in any notation)."""
    if bracketed:
        try:
            address = ipaddress.IPv6Address(hostname)
        except ValueError:
            raise Refused(f"[{hostname}] is not a valid IPv6 address.") from None
        if address.scope_id:
            raise Refused("IPv6 addresses with a zone (%...) are not fetched.")
        return address.compressed, address
    name = hostname.removesuffix(".")
    if not name.isascii():
        try:
            name = idna.encode(name, uts46=True).decode("ascii")
        except idna.IDNAError:
            raise Refused(f"{hostname!r} is not a valid host name.") from None
    numeric = _numeric_ipv4(name)
    if numeric is not None:
        return str(numeric), numeric
    if not _HOST_NAME.fullmatch(name):
        raise Refused(f"{hostname!r} is not a valid host name.")
    return name, None


def _numeric_ipv4(name: str) -> ipaddress.IPv4Address | None:
    """The IPv4 address a numeric host means as browsers and inet_aton read it (2130706433,
    0x7f.1 and 0177.0.0.1 all mean 127.0.0.1), or None when the host is a name."""
    labels = name.split(".")
    if not _NUMERIC_LABEL.fullmatch(labels[-1]):
        return None
    invalid = Refused(f"{name!r} is neither a host name nor a valid IPv4 address.")
    if len(labels) > 4 or not all(_NUMERIC_LABEL.fullmatch(label) for label in labels):
        raise invalid
    numbers: list[int] = []
    for label in labels:
        if label.startswith("0x"):
            numbers.append(int(label[2:] or "0", 16))
        elif len(label) > 1 and label.startswith("0"):
            if not set(label) <= set("01234567"):
                raise invalid
            numbers.append(int(label, 8))
        else:
            numbers.append(int(label))
    *leading, last = numbers
    if any(number > 255 for number in leading) or last >= 256 ** (5 - len(numbers)):
        raise invalid
    value = last
    for index, number in enumerate(leading):
        value += number << (8 * (3 - index))
    return ipaddress.IPv4Address(value)


class Watchdog:
    """Shuts the watched sockets down once `seconds` have passed since it was started.

    Each socket is watched through its own duplicate, so shutting it down reaches the connection
    even after TLS has wrapped the original, and never touches a descriptor reused by another.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        return max(0.0, self._deadline - time.monotonic())

    def watch(self, sock: socket.socket) -> socket.socket:
        duplicate = sock.dup()
        with self._lock:
            self._sockets.append(duplicate)
            if self.expired:
                _shut(duplicate)
        return sock

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            for sock in self._sockets:
                _shut(sock)

    def close(self) -> None:
        self._timer.cancel()
        with self._lock:
            for sock in self._sockets:
                sock.close()
            self._sockets.clear()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the other end
        sock.shutdown(socket.SHUT_RDWR)


class _WatchedHTTPConnection(HTTPConnection):
    def __init__(self, *args: Any, watchdog: Watchdog, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.watchdog = watchdog

    def _new_conn(self) -> socket.socket:
        return self.watchdog.watch(super()._new_conn())


# urllib3's HTTPSConnection is an HTTPConnection: the watched one only adds TLS to it.
class _WatchedHTTPSConnection(_WatchedHTTPConnection, HTTPSConnection):
    pass


class _PinnedHTTPPool(HTTPConnectionPool):
    ConnectionCls = _WatchedHTTPConnection


class _PinnedHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _WatchedHTTPSConnection


@dataclass(frozen=True)
class Fetched:
    url: str  # after redirects
    status: int
    media_type: str  # lower-case, without parameters; "" when the server sent none
    charset: str | None
    body: bytes
    truncated: bool  # stopped at the byte cap


@dataclass(frozen=True)
class FetchLimits:
    max_bytes: int = 2_000_000
    timeout_seconds: float = 15.0
    max_redirects: int = 5


class SafeFetcher:
    """GET a URL the model gave, through AddressGuard at every hop, within FetchLimits.

    `accept(media_type)` decides, before the body is read, which content types are wanted.
    """

    def __init__(
        self,
        guard: AddressGuard,
        limits: FetchLimits = FetchLimits(),
        accept: Callable[[str], bool] = lambda media_type: True,
        ca_certs: str | None = None,
    ) -> None:
        self._guard = guard
        self._limits = limits
        self._accept = accept
        self._ca_certs = ca_certs or certifi.where()

    @property
    def timeout_seconds(self) -> float:
        """The longest a `get` takes, redirects included."""
        return self._limits.timeout_seconds

    def get(self, url: str) -> Fetched:
        watchdog = Watchdog(self._limits.timeout_seconds)
        try:
            return self._follow(url, watchdog)
        except HTTPError as error:
            if watchdog.expired or isinstance(error, ReadTimeoutError | ConnectTimeoutError):
                raise self._timed_out() from None
            raise FetchError(f"the request failed ({_describe(error)}).") from None
        except OSError as error:  # a socket shut down by the watchdog, mid-read
            if watchdog.expired:
                raise self._timed_out() from None
            raise FetchError(f"the request failed ({type(error).__name__}).") from None
        finally:
            watchdog.close()

    def _timed_out(self) -> FetchError:
        return FetchError(
            f"the page did not arrive within {self._limits.timeout_seconds:g} seconds."
        )

    def _follow(self, url: str, watchdog: Watchdog) -> Fetched:
        current = url
        for hop in range(self._limits.max_redirects + 1):
            try:
                target = self._guard.check(current)
            except Refused as refusal:
                if hop == 0:
                    raise
                raise Refused(f"the page redirected to {current}, but {refusal}") from None
            if watchdog.expired:
                raise self._timed_out()
            response = self._request(target, watchdog)
            try:
                if response.status in REDIRECT_STATUSES:
                    location = response.headers.get("Location")
                    if not location:
                        raise FetchError(
                            f"{target.url} answered HTTP {response.status} without a Location."
                        )
                    current = urljoin(target.url, location)
                    continue
                return self._read(target, response, watchdog)
            finally:
                response.close()
        raise Refused(f"too many redirects (more than {self._limits.max_redirects}).")

    def _request(self, target: Target, watchdog: Watchdog) -> HTTPResponse:
        """Connect to the checked addresses in order (never resolving again) and send the GET."""
        headers = {
            "Host": target.host_header,
            "User-Agent": USER_AGENT,
            "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.5",
            "Accept-Encoding": "identity",
        }
        failure: HTTPError | None = None
        for address in target.addresses:
            remaining = max(watchdog.remaining(), 0.001)
            timeout = Timeout(connect=min(CONNECT_TIMEOUT_SECONDS, remaining), read=remaining)
            pool: HTTPConnectionPool
            if target.scheme == "https":
                pool = _PinnedHTTPSPool(
                    address,
                    target.port,
                    timeout=timeout,
                    retries=False,
                    cert_reqs="CERT_REQUIRED",
                    ca_certs=self._ca_certs,
                    assert_hostname=target.host,
                    server_hostname=target.host,
                    watchdog=watchdog,
                )
            else:
                pool = _PinnedHTTPPool(
                    address, target.port, timeout=timeout, retries=False, watchdog=watchdog
                )
            try:
                response = pool.urlopen(
                    "GET",
                    target.request_target,
                    headers=headers,
                    redirect=False,
                    retries=False,
                    preload_content=False,
                    assert_same_host=False,
                    release_conn=False,
                )
            except (NewConnectionError, ConnectTimeoutError) as error:
                failure = error  # the next checked address may answer
                pool.close()
                continue
            assert isinstance(response, HTTPResponse)
            return response
        assert failure is not None
        raise failure

    def _read(self, target: Target, response: HTTPResponse, watchdog: Watchdog) -> Fetched:
        if not 200 <= response.status < 300:
            raise FetchError(f"{target.url} answered HTTP {response.status} {response.reason}.")
        media_type, charset = content_type(response.headers.get("Content-Type", ""))
        if media_type and not self._accept(media_type):
            raise Refused(f"{target.url} is {media_type}, which web_fetch does not read.")
        body = bytearray()
        truncated = False
        while chunk := response.read1(CHUNK_BYTES):
            body += chunk
            if len(body) > self._limits.max_bytes:
                del body[self._limits.max_bytes :]
                truncated = True
                break
            if watchdog.expired:
                raise self._timed_out()
        return Fetched(target.url, response.status, media_type, charset, bytes(body), truncated)


def content_type(header: str) -> tuple[str, str | None]:
    """("text/html", "utf-8") from "text/html; charset=UTF-8"."""
    media_type, _, parameters = header.partition(";")
    charset = None
    for parameter in parameters.split(";"):
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip("\"'"):
            charset = value.strip().strip("\"'").lower()
    return media_type.strip().lower(), charset


def _describe(error: HTTPError) -> str:
    if isinstance(error, SSLError):
        return "TLS error: the certificate does not match the host or is not trusted"
    if isinstance(error, NewConnectionError):
        return "could not connect"
    return type(error).__name__
