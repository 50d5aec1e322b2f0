"""API Gateway's HTTP API on this machine: the template's routes (each function's `Events` of
type `HttpApi`: `POST /webhook` and `POST /hooks/{name}`, both the webhook function's; `GET
/console` and `POST /console/api/{route+}`, the console function's) served
on 127.0.0.1, each request handed to its function's handler as the payload format 2.0 event
API Gateway makes of it (the body base64-encoded, as it passes any bytes; header names in
lower case; the path's parameters), and the handler's answer returned as API Gateway returns
it. A request no route takes (another method, another path) is answered 404 `{"message":
"Not Found"}` as API Gateway answers it, without reaching a function; a handler that raises,
500 `{"message": "Internal Server Error"}`.

While a local stack runs, the deployed API's address (`https://<api id>.execute-api.<region>.
<url suffix>`, as the template writes it) stands for this server's wherever the functions'
environment or the stack's outputs hold it (`HOOKS_URL`, `HooksUrl`): `/hooks add` shows a URL
that works here (`localized`).
"""

from __future__ import annotations

import base64
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from typing import Any

from nanobot_lambda.operator.local.cfn import TemplateContext
from nanobot_lambda.operator.local.http import BackgroundHttpServer, read_body

# The address API Gateway gives an HTTP API, as infra/template.yaml writes it (`!Sub`).
DEPLOYED_API_URL = "https://${ServerlessHttpApi}.execute-api.${AWS::Region}.${AWS::URLSuffix}"
NOT_FOUND = (404, {"message": "Not Found"})
INTERNAL_ERROR = (500, {"message": "Internal Server Error"})

Invoke = Callable[[str, dict[str, Any]], Mapping[str, Any]]
"""Runs a function (its logical id) on an event; returns its answer (statusCode, body…)."""


@dataclass(frozen=True)
class Route:
    method: str  # POST, or ANY
    path: str  # as the template writes it: /hooks/{name}
    function: str  # the logical id of the function it invokes

    @property
    def key(self) -> str:
        return f"{self.method} {self.path}"

    def match(self, method: str, path: str) -> dict[str, str] | None:
        """The path's parameters if this route takes the request, else None."""
        if self.method not in ("ANY", method):
            return None
        pattern = re.sub(
            r"\\\{(\w+)(\\\+)?\\\}",
            lambda found: f"(?P<{found.group(1)}>{'.+' if found.group(2) else '[^/]+'})",
            re.escape(self.path),
        )
        matched = re.fullmatch(pattern, path)
        return matched.groupdict() if matched else None


def http_api_routes(template: TemplateContext) -> list[Route]:
    """The routes of the template's functions' `HttpApi` events (of the functions its
    parameters deploy)."""
    routes = []
    for logical_id, spec in template.resources("AWS::Serverless::Function").items():
        if not template.resource_enabled(logical_id):
            continue
        for event in spec.get("Properties", {}).get("Events", {}).values():
            if event.get("Type") != "HttpApi":
                continue
            properties = event.get("Properties", {})
            method = str(properties.get("Method", "ANY")).upper()
            routes.append(Route(method, str(properties.get("Path", "/")), logical_id))
    return routes


def deployed_api_url(template: TemplateContext) -> str:
    """The API's address as the deployed stack's outputs and variables would give it."""
    return str(template.evaluate({"Fn::Sub": DEPLOYED_API_URL}))


class LocalHttpApi(BackgroundHttpServer):
    def __init__(self, routes: list[Route], invoke: Invoke) -> None:
        self.routes = routes
        self._invoke = invoke
        super().__init__(self._request_handler())

    def localized(self, value: str, deployed_url: str) -> str:
        """`value` with the deployed API's address replaced by this server's."""
        return value.replace(deployed_url, self.url)

    def answer(
        self, method: str, target: str, headers: Mapping[str, str], body: bytes, client: str
    ) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) for one request, as API Gateway would answer it."""
        path, _, query = target.partition("?")
        for route in self.routes:
            parameters = route.match(method, path)
            if parameters is None:
                continue
            event = api_gateway_event(route, method, path, query, headers, body, client)
            if parameters:
                event["pathParameters"] = parameters
            try:
                response = self._invoke(route.function, event)
            except Exception:
                return _json(*INTERNAL_ERROR)
            return _http_answer(response)
        return _json(*NOT_FOUND)

    def _request_handler(self) -> type[BaseHTTPRequestHandler]:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def _respond(self) -> None:
                status, headers, body = api.answer(
                    self.command,
                    self.path,
                    dict(self.headers),
                    read_body(self),
                    self.client_address[0],
                )
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _respond

            def log_message(self, format: str, *args: Any) -> None:
                pass  # the chat's terminal is not the place for request lines

        return Handler


def api_gateway_event(
    route: Route,
    method: str,
    path: str,
    query: str,
    headers: Mapping[str, str],
    body: bytes,
    client: str,
) -> dict[str, Any]:
    """An HTTP API request (payload format 2.0) as API Gateway hands it to a function."""
    lowered: dict[str, str] = {}
    for name, value in headers.items():  # repeated headers joined with commas, as it does
        name = name.lower()
        lowered[name] = f"{lowered[name]},{value}" if name in lowered else value
    return {
        "version": "2.0",
        "routeKey": route.key,
        "rawPath": path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": {
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": client,
                "userAgent": lowered.get("user-agent", ""),
            },
            "requestId": str(uuid.uuid4()),
            "routeKey": route.key,
            "stage": "$default",
            "timeEpoch": int(time.time() * 1000),
        },
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def _http_answer(response: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    """A function's answer as API Gateway sends it on (payload format 2.0, structured)."""
    raw = response.get("body") or ""
    body = base64.b64decode(raw) if response.get("isBase64Encoded") else str(raw).encode()
    headers = {str(name): str(value) for name, value in (response.get("headers") or {}).items()}
    if not any(name.lower() == "content-type" for name in headers):
        headers["Content-Type"] = "application/json"
    return int(response.get("statusCode", 200)), headers, body


def _json(status: int, payload: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()
