"""Which offers answer a Delivery request: workspaces (property tokens) and QA mode (preview offers).

- Without `property.token` a request is answered from the default offers; with one, from the offers set for
  that token only (`PUT /_sim/target/offers?propertyToken=...`). A token nobody set up has no offers: every
  mbox comes back without content, as the API description says of a missing or wrong token.
- With `qaMode.token` equal to a token registered by `PUT /_sim/target/preview`, the preview offers answer
  first; unless `listedActivitiesOnly` is true, an mbox they lack is answered from the request's workspace
  (the QAMode description: activities "in isolation or together" with the other active ones). The
  activities "in the token" are the preview's mboxes in the order given; `previewIndexes` narrows them to
  those its `activityIndex` values name (1-based; indexes out of bounds are ignored, as the spec says).
  An unknown token refuses the request (400 `Invalid QA mode token`): the token is Target's encrypted
  list of activities, and the QAMode validation checks it belongs to the client.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

INVALID_QA_TOKEN = "Invalid QA mode token"


@dataclass
class Scope:
    """The offers one request is answered from."""
    offers: dict[str, dict]
    property_token: str | None = None
    qa_token: str | None = None  # set when preview offers answer
    fallback: dict[str, dict] = field(default_factory=dict)  # the workspace, under a preview

    def lookup(self, name: str) -> tuple[dict | None, bool]:
        """(offer, whether it is a preview offer) for mbox `name`."""
        if name in self.offers:
            return self.offers[name], self.qa_token is not None
        if self.qa_token is not None and name in self.fallback:
            return self.fallback[name], False
        return None, False


def property_token(body: dict) -> str | None:
    prop = body.get("property")
    token = prop.get("token") if isinstance(prop, dict) else None
    return token if isinstance(token, str) else None


def qa_mode_violations(body: dict) -> tuple[list[str], list[str]]:
    """Rules of `qaMode` that do not depend on the simulator's state: (errors, advisories)."""
    errors: list[str] = []
    advisories: list[str] = []
    qa = body.get("qaMode")
    if not isinstance(qa, dict):
        return errors, advisories
    indexes = qa.get("previewIndexes")
    if isinstance(indexes, list) and not indexes:
        errors.append("$.qaMode.previewIndexes: if present, the list cannot be empty (QAMode description)")
    if qa.get("token") is None:
        advisories.append("advisory: $.qaMode without a token names no activity: the request is answered as "
                          "without qaMode (QAMode description)")
    true_ids, false_ids = qa.get("evaluateAsTrueAudienceIds"), qa.get("evaluateAsFalseAudienceIds")
    if isinstance(true_ids, list) and isinstance(false_ids, list):
        both = sorted({i for i in true_ids if isinstance(i, int)} & {i for i in false_ids if isinstance(i, int)})
        if both:
            advisories.append(f"advisory: $.qaMode: audience ids {both} are listed to evaluate both as true and "
                              "as false (QAMode description)")
    return errors, advisories


def _selected(offers: dict[str, dict], indexes: Any, advisories: list[str]) -> dict[str, dict]:
    """The preview offers `previewIndexes` selects (all of them when it names none in bounds)."""
    if not isinstance(indexes, list) or not indexes:
        return offers
    names = list(offers)
    chosen: list[str] = []
    for i, entry in enumerate(indexes):
        index = entry.get("activityIndex") if isinstance(entry, dict) else None
        if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(names):
            if names[index - 1] not in chosen:
                chosen.append(names[index - 1])
        else:
            advisories.append(f"advisory: $.qaMode.previewIndexes[{i}].activityIndex: {index!r} references no "
                              f"activity of the token's {len(names)}; ignored (QAModePreviewIndex validation)")
    if not chosen:
        return offers
    return {name: offers[name] for name in chosen}


def resolve(state, body: dict) -> tuple[Scope | None, list[str]]:
    """(scope, advisories); scope None: the request is refused with `INVALID_QA_TOKEN`. Caller holds the lock."""
    advisories: list[str] = []
    token = property_token(body)
    workspace = state.offers if token is None else state.workspaces.get(token, {})
    qa = body.get("qaMode")
    qa_token = qa.get("token") if isinstance(qa, dict) else None
    if not isinstance(qa_token, str):
        return Scope(workspace, token), advisories
    preview = state.previews.get(qa_token)
    if preview is None:
        return None, advisories
    offers = _selected(preview, qa.get("previewIndexes"), advisories)
    fallback = {} if qa.get("listedActivitiesOnly") is True else workspace
    return Scope(offers, token, qa_token, fallback), advisories
