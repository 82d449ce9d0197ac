"""The result of handling an upstream request: the response plus what the checks found."""

from __future__ import annotations

from dataclasses import dataclass, field

from preflight_sim.exchange import Response


@dataclass
class Outcome:
    response: Response
    violations: list[str] = field(default_factory=list)  # request-side contract violations
    validate_response: bool = True  # False for answers that are not the application's (e.g. a 429 page)
