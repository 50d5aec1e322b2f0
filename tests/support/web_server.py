"""A scripted web server on 127.0.0.1 standing in for the sites web_fetch reads.

Each path answers with a `Reply`: status, headers, a body sent in chunks with an optional delay
between them (a slow server), after an optional delay before the headers (a server that never
answers in time). Every request is recorded with its Host header. With `tls`, the server speaks
HTTPS with the given certificate, so tests can check SNI and certificate verification.
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from nanobot_lambda.operator.local.http import BackgroundHttpServer


@dataclass
class Reply:
    body: bytes = b""
    status: int = 200
    content_type: str | None = "text/html; charset=utf-8"
    headers: dict[str, str] = field(default_factory=dict)
    chunk_size: int = 65_536
    chunk_delay: float = 0.0  # seconds between chunks
    delay_before: float = 0.0  # seconds before the status line
    content_length: bool = True  # False: the body ends when the connection closes


@dataclass(frozen=True)
class SeenRequest:
    path: str
    host: str
    headers: dict[str, str]


class WebServer(BackgroundHttpServer):
    def __init__(self, tls: Certificates | None = None) -> None:
        self.routes: dict[str, Reply] = {}
        self.requests: list[SeenRequest] = []
        self.server_names: list[str | None] = []  # TLS SNI of each handshake
        super().__init__(self._handler())
        self._server.daemon_threads = True  # stop() does not wait for a slow reply to drip out
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls.chain, tls.key)
            context.sni_callback = lambda _socket, name, _context: self.server_names.append(name)
            self._server.socket = context.wrap_socket(self._server.socket, server_side=True)
            self.scheme = "https"

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def route(self, path: str, reply: Reply) -> str:
        self.routes[path] = reply
        return self.url + path

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:
                server.requests.append(
                    SeenRequest(self.path, self.headers.get("Host", ""), dict(self.headers))
                )
                reply = server.routes.get(self.path) or Reply(b"not found", status=404)
                time.sleep(reply.delay_before)
                try:
                    self.send_response(reply.status)
                    if reply.content_type is not None:
                        self.send_header("Content-Type", reply.content_type)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    if reply.content_length:
                        self.send_header("Content-Length", str(len(reply.body)))
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for start in range(0, len(reply.body), reply.chunk_size):
                        self.wfile.write(reply.body[start : start + reply.chunk_size])
                        self.wfile.flush()
                        time.sleep(reply.chunk_delay)
                except OSError:
                    pass  # the client hung up (a cap was reached): nothing more to send
                self.close_connection = True

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@dataclass(frozen=True)
class Certificates:
    ca: Path  # the authority a client must trust
    chain: Path  # the server's certificate
    key: Path  # the server's private key


def make_certificates(folder: Path, host_name: str) -> Certificates:
    """A throw-away authority and a server certificate for `host_name` (a DNS name only)."""
    from datetime import UTC, datetime, timedelta

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.now(UTC)

    def build(
        subject: str, key: ec.EllipticCurvePrivateKey, issuer: x509.Name, signer: Any, ca: bool
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=5))
            .not_valid_after(now + timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if ca:
            builder = builder.add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    key_cert_sign=True,
                    crl_sign=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            ).add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
        else:
            builder = (
                builder.add_extension(
                    x509.SubjectAlternativeName([x509.DNSName(host_name)]), critical=False
                )
                .add_extension(
                    x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH]),
                    critical=False,
                )
                .add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(signer.public_key()),
                    critical=False,
                )
            )
        return builder.sign(signer, hashes.SHA256())

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "nanobot test CA")])
    ca_cert = build("nanobot test CA", ca_key, ca_name, ca_key, ca=True)
    server_key = ec.generate_private_key(ec.SECP256R1())
    server_cert = build(host_name, server_key, ca_name, ca_key, ca=False)
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key")
    paths.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    paths.chain.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    paths.key.write_bytes(
        server_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return paths
