"""The simulator's state and its routing table (which Adobe operation a method and path name)."""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable
from urllib.parse import unquote

from preflight_sim import pass_, pass_sessions, target, target_artifacts, target_geo
from preflight_sim.clock import Clock
from preflight_sim.connections import ConnectionRegistry
from preflight_sim.faults import FaultStore
from preflight_sim.reqlog import RequestLog
from preflight_sim.validation import SERVER_PREFIX, SpecSet


@dataclass(frozen=True)
class Route:
    service: str
    method: str
    template: str  # as in the spec, relative to the service's server prefix
    operation: str
    check: Callable[..., list[str]]  # (sim, req, params) -> request violations, no side effects
    handle: Callable[..., Any]  # (sim, req, params, seq) -> Outcome
    simulated: bool = True

    @property
    def full_template(self) -> str:
        return SERVER_PREFIX[self.service] + self.template

    @property
    def pattern(self) -> re.Pattern:
        regex = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", re.escape(self.full_template))
        return re.compile(f"^{regex}$")

    @property
    def literal_segments(self) -> int:
        return sum(1 for s in self.full_template.split("/") if s and not s.startswith("{"))


def _builtin_routes() -> list[Route]:
    rest = pass_.rest_checks
    return [
        Route("target", "POST", target.OPERATION_TEMPLATE, "delivery", target.delivery_checks, target.handle_delivery),
        Route("dcr", "POST", "/client/register", "register", pass_.register_checks, pass_.handle_register),
        Route("dcr", "POST", "/client/token", "token", pass_.token_checks, pass_.handle_token),
        Route("pass", "GET", "/{serviceProvider}/configuration", "configuration",
              rest("/{serviceProvider}/configuration", "GET"), pass_.handle_configuration),
        Route("pass", "GET", "/{serviceProvider}/profiles", "profiles",
              rest("/{serviceProvider}/profiles", "GET"), pass_.handle_profiles),
        Route("pass", "GET", "/{serviceProvider}/profiles/{mvpd}", "profileForMvpd",
              rest("/{serviceProvider}/profiles/{mvpd}", "GET"), pass_.handle_profiles),
        Route("pass", "POST", "/{serviceProvider}/decisions/preauthorize/{mvpd}", "preauthorize",
              rest("/{serviceProvider}/decisions/preauthorize/{mvpd}", "POST", True),
              pass_.decisions_handler("preauthorize")),
        Route("pass", "POST", "/{serviceProvider}/decisions/authorize/{mvpd}", "authorize",
              rest("/{serviceProvider}/decisions/authorize/{mvpd}", "POST", True),
              pass_.decisions_handler("authorize")),
        Route("pass", "GET", "/{serviceProvider}/logout/{mvpd}", "logout",
              rest("/{serviceProvider}/logout/{mvpd}", "GET"), pass_.handle_logout),
        *_session_routes(),
        Route("artifacts", "GET", target_artifacts.RULES, "artifact", target_artifacts.artifact_checks,
              target_artifacts.handle_artifact),
        Route("artifacts", "GET", target_artifacts.PROPERTY_RULES, "propertyArtifact",
              target_artifacts.artifact_checks, target_artifacts.handle_artifact),
        Route("artifacts", "GET", target_artifacts.RULES_BIN, "artifactBin", target_artifacts.artifact_checks,
              target_artifacts.handle_artifact),
        Route("artifacts", "GET", target_artifacts.PROPERTY_RULES_BIN, "propertyArtifactBin",
              target_artifacts.artifact_checks, target_artifacts.handle_artifact),
        Route("geo", "GET", target_geo.GEO, "geo", target_geo.geo_checks, target_geo.handle_geo),
    ]


def _session_routes() -> list[Route]:
    """The second-screen authentication flow (pass_sessions)."""
    s = pass_sessions
    return [
        Route("pass", "POST", s.SESSIONS, "createSession", s.session_checks(s.SESSIONS, "POST"), s.handle_create),
        Route("pass", "POST", s.SESSION, "resumeSession", s.session_checks(s.SESSION, "POST"), s.handle_resume),
        Route("pass", "GET", s.SESSION, "sessionStatus", s.session_checks(s.SESSION, "GET"), s.handle_status),
        Route("pass", "GET", s.PROFILES_CODE, "profileForCode", s.session_checks(s.PROFILES_CODE, "GET"),
              s.handle_profiles_code),
        Route("pass", "GET", s.AUTHENTICATE, "authenticate", s.authenticate_checks, s.handle_authenticate),
    ]


class Router:
    def __init__(self, specs: SpecSet):
        routes = _builtin_routes()
        known = {(r.service, r.method, r.template) for r in routes}
        # Operations the spec defines but the simulator does not act out still exist on the wire.
        for service in ("dcr", "pass"):
            for template, item in specs.paths(service).items():
                for method, op in item.items():
                    key = (service, method.upper(), template)
                    if not isinstance(op, dict) or key in known:
                        continue
                    name = op.get("operationId") or f"{method}:{template}"
                    routes.append(Route(service, method.upper(), template, name,
                                        pass_.rest_checks(template, method.upper()),
                                        pass_.not_simulated_handler(template, method.upper()), simulated=False))
        self.routes = sorted(routes, key=lambda r: -r.literal_segments)
        self._patterns = [(r, r.pattern) for r in self.routes]

    @staticmethod
    def service_for(path: str) -> str | None:
        if path.startswith("/api/v2/") or path == "/api/v2":
            return "pass"
        if path.startswith("/o/"):
            return "dcr"
        if path.startswith("/rest/"):
            return "target"
        if path.endswith("/rules.json") or path.endswith("/rules.bin"):
            return "artifacts"
        if path == target_geo.GEO:
            return "geo"
        return None

    def match(self, method: str, path: str) -> tuple[Route | None, dict, list[str]]:
        """(route, path parameters, methods allowed on the path when the method does not match)."""
        allowed: list[str] = []
        if len(path) > 1 and path.endswith("/"):
            route, params, allowed = self.match(method, path.rstrip("/"))
            return route, dict(params, _trailing_slash=True) if route else params, allowed
        for route, pattern in self._patterns:
            m = pattern.match(path)
            if not m:
                continue
            if route.method == method:
                return route, {k: unquote(v) for k, v in m.groupdict().items()}, []
            allowed.append(route.method)
        return None, {}, allowed


class Simulator:
    """Everything a request handler needs; `reset()` returns it to the state it started in."""

    def __init__(self, specs: SpecSet, offers: dict[str, dict], quiet: bool = False, offers_source: str | None = None,
                 edge_host: str | None = target.EDGE_HOST, clock_offset_ms: int = 0,
                 notification_log_size: int = target.NOTIFICATION_LOG_SIZE):
        self.specs = specs
        self.notification_log_size = notification_log_size
        self.initial_clock_offset_ms = clock_offset_ms
        self.clock = Clock(clock_offset_ms)
        self.initial_edge_host = edge_host
        self.edge_host = edge_host
        self.quiet = quiet
        self.initial_offers = offers
        self.offers_source = offers_source
        self.router = Router(specs)
        self.started = time.time()
        self.lock = threading.RLock()
        self.log = RequestLog(self.clock)
        self.faults = FaultStore()
        self.target = target.TargetState(offers, notification_log_size)
        self.pass_ = pass_.PassState()
        self.connections = ConnectionRegistry()

    def reset(self) -> None:
        with self.lock:
            self.faults.clear()
            self.log.clear()
            self.log.reset_counters()
            self.target = target.TargetState(self.initial_offers, self.notification_log_size)
            self.pass_ = pass_.PassState()
            self.edge_host = self.initial_edge_host
            self.clock.set_offset(self.initial_clock_offset_ms)
            self.connections.reset_counters()

    def stats(self) -> dict:
        counts = self.log.counts()
        target_stats = self.target.stats()
        state = self.pass_
        with state.lock:
            pass_stats = {"registrations": state.registration_count, "tokensIssued": state.tokens_issued,
                          "rateLimited": state.ratelimit.limited}
        return {
            "requests": counts["requests"],
            "operations": counts["operations"],
            "registrations": pass_stats["registrations"],
            "tokensIssued": pass_stats["tokensIssued"],
            "rateLimited": pass_stats["rateLimited"],
            "notifications": target_stats["notifications"],
            "clickNotifications": target_stats["clickNotifications"],
            "displayNotifications": target_stats["displayNotifications"],
            "notificationRefusals": target_stats["refusedRequests"],
            "qaModeRefusals": target_stats["qaModeRefusals"],
            "prefetched": target_stats["prefetched"],
            "executed": target_stats["executed"],
            "violations": counts["violations"],
            "requestViolations": counts["requestViolations"],
            "responseViolations": counts["responseViolations"],
            "faultsApplied": counts["faultsApplied"],
        }
