"""What the service modules see of an HTTP exchange: a parsed request and the response to send."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs


@dataclass
class Request:
    method: str
    path: str
    query: dict  # name -> str, or list of str when repeated
    headers: dict  # lower-case name -> str (repeated headers joined with ", ")
    raw_body: bytes
    client: str

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())

    @property
    def content_type(self) -> str:
        """Media type without parameters, lower-case ('' when absent)."""
        return (self.header("content-type") or "").split(";", 1)[0].strip().lower()

    def form(self) -> dict:
        """Body parsed as application/x-www-form-urlencoded (empty when it is not a form)."""
        if not self.raw_body:
            return {}
        try:
            text = self.raw_body.decode("utf-8")
        except UnicodeDecodeError:
            return {}
        return flatten_qs(parse_qs(text, keep_blank_values=True))

    def json(self) -> tuple[bool, Any]:
        """(ok, value) for the body parsed as JSON."""
        try:
            return True, json.loads(self.raw_body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return False, None

    def logged_body(self) -> Any:
        """The body as the request log shows it: JSON, a form dict, raw text, or None."""
        if not self.raw_body:
            return None
        ok, value = self.json()
        if ok:
            return value
        if self.content_type == "application/x-www-form-urlencoded":
            return self.form()
        return self.raw_body.decode("utf-8", errors="replace")


def flatten_qs(parsed: dict) -> dict:
    return {k: (v[0] if len(v) == 1 else v) for k, v in parsed.items()}


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str | None = None
    headers: dict = field(default_factory=dict)
    document: Any = None  # the JSON value behind `body`, kept for the response self-check
    has_document: bool = False
    note: str | None = None  # why (for the request log), never sent

    @classmethod
    def json(cls, status: int, document: Any, headers: dict | None = None, note: str | None = None) -> "Response":
        body = json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        return cls(status, body, "application/json;charset=UTF-8", dict(headers or {}), document, True, note)

    @classmethod
    def empty(cls, status: int, headers: dict | None = None) -> "Response":
        return cls(status, b"", None, dict(headers or {}))

    @classmethod
    def text(cls, status: int, text: str, content_type: str = "text/plain; charset=utf-8",
             headers: dict | None = None) -> "Response":
        return cls(status, text.encode("utf-8"), content_type, dict(headers or {}))
