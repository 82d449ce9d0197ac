"""Loading the official OpenAPI files and validating bodies and parameters against them.

The Target Delivery API is YAML split over many files joined by relative `$ref`s; every file is
loaded into one `referencing.Registry` keyed by its absolute `file://` URI, so refs resolve the
way the spec authors wrote them. The Adobe Pass files are single JSON documents (OpenAPI 3.0.1)
with internal refs. Schemas are validated with `openapi_schema_validator.OAS30Validator`.

A schema is always addressed as `<document uri>#<json pointer>` (for example the request body
schema of an operation is a pointer into `paths`), so inline schemas and `$ref`s are handled alike.

Known defects of the published files are corrected by small, named overlays (see `OVERLAYS`);
each one is listed in `/health` so nobody mistakes an overlay for the spec.
"""

from __future__ import annotations

import copy
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SERVICES = ("target", "dcr", "pass")

# Where each service's paths live on the wire (the spec's `servers` entry, host removed).
SERVER_PREFIX = {"target": "", "dcr": "/o", "pass": "/api/v2", "artifacts": "", "geo": ""}

SPEC_FILES = {
    "target": "target-delivery/delivery/api.yaml",
    "dcr": "adobe-pass/dcrApi.json",
    "pass": "adobe-pass/restApiV2.json",
}

OVERLAYS = [
    "target MboxRequest.required lists 'mbox' but the property is 'name': 'name' is required instead",
    "pass Message schema is {type: object} but the service and its docs send a string: string or object accepted",
    "pass UserMetadataResponse.value is {type: object} but the docs show strings, lists and maps: any value accepted",
    "target ResponseTokens values are typed object but Target sends strings (and lists): any value accepted",
]


class SpecError(Exception):
    """The specs folder exists but cannot be loaded."""


def _pointer_escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str) -> str:
    return "/" + "/".join(_pointer_escape(t) for t in tokens)


def format_path(path: Any) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _string_keys(value: Any) -> Any:
    """YAML reads `200:` as an int; JSON pointers (and JSON) only know string keys."""
    if isinstance(value, dict):
        return {str(k): _string_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_string_keys(v) for v in value]
    return value


def _short(text: str, limit: int = 300) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True)
class Operation:
    service: str
    method: str
    template: str  # path template as written in the spec, relative to the server prefix
    spec: dict  # the operation object
    doc_uri: str
    path_pointer: str  # JSON pointer of the operation object inside its document

    @property
    def operation_id(self) -> str:
        return self.spec.get("operationId", "")


class SpecSet:
    """The loaded specs. With no specs folder it is empty and `validating` is False."""

    def __init__(self, specs_dir: Path | None):
        self.dir = specs_dir
        self.validating = False
        self.overlays: list[str] = []
        self._docs: dict[str, dict] = {}
        self._doc_uris: dict[str, str] = {}
        self._registry = None
        self._validators: dict[str, Any] = {}
        self._lock = threading.Lock()
        if specs_dir is None or not specs_dir.is_dir():
            return
        self._load(specs_dir)
        self.validating = True

    # loading ---------------------------------------------------------------------------------

    def _load(self, root: Path) -> None:
        try:
            import yaml
            from referencing import Registry, Resource
            from referencing.jsonschema import DRAFT4
        except ImportError as exc:  # pragma: no cover - requirements.txt lists these
            raise SpecError(f"missing Python package: {exc.name}") from exc

        resources = []
        target_root = root / "target-delivery"
        if not target_root.is_dir():
            raise SpecError(f"{target_root} is missing")
        for path in sorted(target_root.rglob("*.yaml")):
            with path.open(encoding="utf-8") as fh:
                data = _string_keys(yaml.safe_load(fh))
            uri = path.resolve().as_uri()
            if path.name == "MboxRequest.yaml":
                data = self._overlay_mbox_request(data)
            if path.name == "ResponseTokens.yaml":
                data = self._overlay_response_tokens(data)
            resources.append((uri, Resource.from_contents(data, default_specification=DRAFT4)))
            if path.resolve() == (root / SPEC_FILES["target"]).resolve():
                self._docs["target"] = data
                self._doc_uris["target"] = uri

        for service in ("dcr", "pass"):
            path = root / SPEC_FILES[service]
            if not path.is_file():
                raise SpecError(f"{path} is missing")
            with path.open(encoding="utf-8") as fh:
                data = json.load(fh)
            if service == "pass":
                data = self._overlay_pass(data)
            uri = path.resolve().as_uri()
            self._docs[service] = data
            self._doc_uris[service] = uri
            resources.append((uri, Resource.from_contents(data, default_specification=DRAFT4)))

        if "target" not in self._docs:
            raise SpecError(f"{root / SPEC_FILES['target']} is missing")
        self._registry = Registry().with_resources(resources)

    def _overlay_mbox_request(self, data: dict) -> dict:
        data = copy.deepcopy(data)
        schema = data.get("MboxRequest", {})
        required = schema.get("required")
        if isinstance(required, list) and "mbox" in required:
            schema["required"] = ["name" if r == "mbox" else r for r in required]
            self.overlays.append(OVERLAYS[0])
        return data

    def _overlay_response_tokens(self, data: dict) -> dict:
        data = copy.deepcopy(data)
        schema = data.get("ResponseTokens", {})
        values = schema.get("additionalProperties")
        if isinstance(values, dict) and values.get("type") == "object":
            schema["additionalProperties"] = {}
            self.overlays.append(OVERLAYS[3])
        return data

    def _overlay_pass(self, data: dict) -> dict:
        data = copy.deepcopy(data)
        schemas = data.get("components", {}).get("schemas", {})
        if schemas.get("Message") == {"type": "object"}:
            schemas["Message"] = {"anyOf": [{"type": "string"}, {"type": "object"}]}
            self.overlays.append(OVERLAYS[1])
        value = schemas.get("UserMetadataResponse", {}).get("properties", {}).get("value")
        if isinstance(value, dict) and value.get("type") == "object":
            schemas["UserMetadataResponse"]["properties"]["value"] = {}
            self.overlays.append(OVERLAYS[2])
        return data

    # lookups ---------------------------------------------------------------------------------

    def operation(self, service: str, method: str, template: str) -> Operation | None:
        doc = self._docs.get(service)
        if doc is None:
            return None
        op = doc.get("paths", {}).get(template, {}).get(method.lower())
        if not isinstance(op, dict):
            return None
        return Operation(service, method.upper(), template, op, self._doc_uris[service],
                         pointer("paths", template, method.lower()))

    def paths(self, service: str) -> dict:
        return self._docs.get(service, {}).get("paths", {})

    def schema_ref(self, service: str, name: str) -> str | None:
        """Reference of a named component schema (Adobe Pass documents)."""
        if service not in self._doc_uris:
            return None
        return self._doc_uris[service] + "#" + pointer("components", "schemas", name)

    def file_ref(self, relative: str) -> str | None:
        """Reference into a Target file, e.g. `delivery/components/Option.yaml#/Option`."""
        if "target" not in self._doc_uris or self.dir is None:
            return None
        file_part, _, fragment = relative.partition("#")
        path = (self.dir / "target-delivery" / file_part).resolve()
        return path.as_uri() + "#" + fragment

    def request_body_ref(self, op: Operation, content_type: str) -> str | None:
        content = op.spec.get("requestBody", {}).get("content", {})
        if content_type not in content or "schema" not in content[content_type]:
            return None
        return op.doc_uri + "#" + op.path_pointer + pointer("requestBody", "content", content_type, "schema")

    def request_body_required(self, op: Operation) -> bool:
        return bool(op.spec.get("requestBody", {}).get("required"))

    def request_content_types(self, op: Operation) -> list[str]:
        return list(op.spec.get("requestBody", {}).get("content", {}).keys())

    def response_ref(self, op: Operation, status: int,
                     content_type: str = "application/json") -> tuple[bool, str | None]:
        """(declared, schema ref) for a response status; `default` counts as declared."""
        responses = op.spec.get("responses", {})
        key = next((k for k in (str(status), status) if k in responses), None)  # YAML keys may be ints
        if key is None and "default" in responses:
            key = "default"
        if key is None:
            return False, None
        content = responses[key].get("content") or {}
        if content_type not in content or "schema" not in content[content_type]:
            return True, None
        return True, op.doc_uri + "#" + op.path_pointer + pointer("responses", str(key), "content", content_type,
                                                                  "schema")

    def parameters(self, op: Operation) -> list[dict]:
        return [p for p in op.spec.get("parameters", []) if isinstance(p, dict) and "name" in p]

    # validation ------------------------------------------------------------------------------

    def _validator(self, ref: str):
        with self._lock:
            validator = self._validators.get(ref)
            if validator is None:
                from openapi_schema_validator import OAS30Validator, oas30_format_checker

                validator = OAS30Validator({"$ref": ref}, registry=self._registry,
                                           format_checker=oas30_format_checker)
                self._validators[ref] = validator
            return validator

    def validate(self, ref: str | None, instance: Any) -> list[str]:
        """Messages for every way `instance` breaks the schema at `ref` (empty when it conforms)."""
        if ref is None or not self.validating:
            return []
        validator = self._validator(ref)
        errors = sorted(validator.iter_errors(instance), key=lambda e: [str(p) for p in e.absolute_path])
        return [_short(f"{format_path(e.absolute_path)}: {e.message}") for e in errors]

    def warm(self) -> None:
        """Build the validators the hot paths use, so the first real request is not the slow one."""
        if not self.validating:
            return
        op = self.operation("target", "POST", "/rest/v1/delivery")
        if op is not None:
            self.validate(self.request_body_ref(op, "application/json"),
                          {"context": {"channel": "web", "geo": {"ipAddress": "127.0.0.1"}},
                           "prefetch": {"mboxes": [{"index": 1, "name": "warm"}]}})
            self.validate(self.response_ref(op, 200)[1], {"status": 200})
        for name in ("DecisionsResponse", "ProfilesResponse", "ConfigurationResponse", "ErrorInformation"):
            self.validate(self.schema_ref("pass", name), {})

    def describe(self) -> dict:
        return {
            "validating": self.validating,
            "specs": str(self.dir) if self.validating and self.dir is not None else None,
            "overlays": list(self.overlays),
        }

