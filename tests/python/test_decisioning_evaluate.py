"""`decisioning.evaluate` (admin) and `preflightctl decisioning evaluate`: what a box would get from a rules
artifact, decided by the real agent's on-device engine. Every one of Adobe's conformance cases
(`$PREFLIGHT_SHARED/conformance/target-sdk-testing`, else ../shared, read in place) goes through the real agent and is compared as
Adobe's runner compares it; bad arguments are refused field by field and change nothing."""

import calendar
import json
import os
import re
import subprocess

import pytest

from agent_harness import CONFORMANCE, REPO, agent_in_own_folder, bin_dir, ok, request


def read_json(path):
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def conformance_cases():
    """[(suite, name, case, conf, artifact)], suites by file name, cases in file order; artifacts named by a case or
    its suite read from `artifacts/` as Adobe's runner hydrates them."""
    models = os.path.join(CONFORMANCE, "models")
    if not os.path.isdir(models):
        return []
    cases = []
    for file in sorted(f for f in os.listdir(models) if f.startswith("TEST_SUITE_") and f.endswith(".json")):
        suite = read_json(os.path.join(models, file))
        for name, case in suite.get("test", {}).items():
            artifact = case.get("artifact", suite.get("artifact"))
            if isinstance(artifact, str):
                artifact = read_json(os.path.join(CONFORMANCE, "artifacts", artifact + ".json"))
            cases.append((file[: -len(".json")], name, case, case.get("conf", suite.get("conf", {})), artifact))
    return cases


CASES = conformance_cases()


def mock_date_ms(mock):
    """JavaScript's `Date.UTC(year, month, date, hours, minutes, seconds)` (month 0-based)."""
    year, month = mock.get("year", 1970), mock.get("month", 0)
    year, month = year + month // 12, month % 12
    seconds = calendar.timegm((year, month + 1, 1, 0, 0, 0, 0, 0, 0))
    seconds += (mock.get("date", 1) - 1) * 86400 + mock.get("hours", 0) * 3600 + mock.get("minutes", 0) * 60
    return (seconds + mock.get("seconds", 0)) * 1000


def first_difference(received, expected, path="$"):
    """Jest's `toMatchObject` as Adobe's runner uses it: the first place `received` does not match, or None."""
    missing = object()

    def show(value):
        text = "nothing" if value is missing else json.dumps(value)
        return text if len(text) <= 300 else text[:300] + "…"

    def mismatch():
        return f"{path}: expected {show(expected)}, got {show(received)}"

    def is_number(value):
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    if expected == "expect.any(String)":
        return None if isinstance(received, str) else mismatch()
    if expected == "expect.any(Number)":
        return None if is_number(received) else mismatch()
    if expected == "expect.any(Object)":
        return None if received is None or isinstance(received, (dict, list)) else mismatch()
    if isinstance(expected, dict):
        if not expected:
            return None
        if not isinstance(received, dict):
            return mismatch()
        for key, value in expected.items():
            if key not in received:
                return f"{path}.{key}: expected {show(value)}, got nothing"
            difference = first_difference(received[key], value, f"{path}.{key}")
            if difference:
                return difference
        return None
    if isinstance(expected, list):
        if not isinstance(received, list) or len(received) != len(expected):
            return mismatch()
        for index, (element, wanted) in enumerate(zip(received, expected)):
            difference = first_difference(element, wanted, f"{path}[{index}]")
            if difference:
                return difference
        return None
    if is_number(expected):
        return None if is_number(received) and float(received) == float(expected) else mismatch()
    return None if received == expected and type(received) is type(expected) else mismatch()


def evaluate_args(case, conf, artifact):
    """The admin command's arguments for a conformance case."""
    inputs = case.get("input", {})
    args = {
        "artifact": artifact,
        "request": inputs.get("request", {}),
        "conf": {key: conf[key] for key in ("client", "organizationId", "propertyToken", "telemetryEnabled")
                 if key in conf},
    }
    if "mockDate" in case:
        args["now"] = mock_date_ms(case["mockDate"])
    if "mockGeo" in case:
        args["geo"] = case["mockGeo"]
    if "sessionId" in inputs:
        args["sessionId"] = inputs["sessionId"]
    hint = inputs.get("locationHint", inputs.get("targetLocationHint"))
    if hint is not None:
        args["locationHint"] = hint
    return args


@pytest.fixture(scope="module")
def shared_agent():
    """One preflightd for the module (upstreams unreachable): evaluating touches nothing, so cases can share it."""
    yield from agent_in_own_folder("pf-de-")


def test_the_conformance_cases_are_there():
    assert len(CASES) >= 55, f"expected Adobe's 55 conformance cases in {CONFORMANCE}, found {len(CASES)}"


@pytest.mark.parametrize("suite,name,case,conf,artifact", CASES, ids=[f"{c[0]}/{c[1]}" for c in CASES])
def test_conformance_case_through_the_agent(shared_agent, suite, name, case, conf, artifact):
    reply = request(shared_agent.admin, "decisioning.evaluate", evaluate_args(case, conf, artifact), timeout_ms=20000)
    assert reply["ok"] is True, f"{suite} / {name}: {reply}"
    result = reply["result"]
    assert set(result) <= {"response", "notifications", "notificationRequest", "geoLookup"}, result
    if "output" in case:
        difference = first_difference(result["response"], case["output"])
        assert difference is None, f"{suite} / {name}: response differs at {difference}"
    if "notificationOutput" in case:
        expected = case["notificationOutput"]
        sent = result["notificationRequest"]
        if expected is None:
            assert sent is None, f"{suite} / {name}: expected no notification, got {json.dumps(sent)}"
        else:
            difference = first_difference({"request": sent} if sent is not None else None, expected)
            assert difference is None, f"{suite} / {name}: notification differs at {difference}"
            # `notifications` is the request's list as it stands.
            assert result["notifications"] == (sent or {}).get("notifications", [])


# A small artifact: one A/B activity on `hero` for everyone, one rule needing geo on `city-offer`.
ARTIFACT = {
    "version": "1.0.0",
    "meta": {"clientCode": "acme", "environment": "production"},
    "globalMbox": "target-global-mbox",
    "geoTargetingEnabled": True,
    "responseTokens": ["activity.id", "geo.city"],
    "remoteMboxes": [],
    "remoteViews": [],
    "localMboxes": ["hero", "city-offer"],
    "localViews": [],
    "rules": {
        "mboxes": {
            "hero": [{
                "ruleKey": "1001",
                "activityId": 1001,
                "meta": {"activity.id": 1001, "activity.type": "ab", "experience.id": 0,
                         "location.name": "hero", "location.type": "mbox", "offer.id": 5001},
                "condition": {"and": [{"<=": [0, {"var": "allocation"}]}, {">=": [100, {"var": "allocation"}]}]},
                "consequence": {"name": "hero", "options": [
                    {"type": "html", "eventToken": "hero-token", "content": "<b>Winter sale</b>"}], "metrics": []},
            }],
            "city-offer": [{
                "ruleKey": "1002",
                "activityId": 1002,
                "meta": {"activity.id": 1002, "activity.type": "xt", "experience.id": 0,
                         "location.name": "city-offer", "location.type": "mbox", "offer.id": 5002},
                "condition": {"==": [{"var": "geo.city"}, "SAN FRANCISCO"]},
                "consequence": {"name": "city-offer", "options": [
                    {"type": "html", "eventToken": "city-token", "content": "Hello, San Francisco"}],
                    "metrics": []},
            }],
        },
        "views": {},
    },
}

REQUEST = {"requestId": "r-1", "id": {"tntId": "visitor-1.28_0"}, "context": {"channel": "web"},
           "execute": {"mboxes": [{"name": "hero", "index": 1}]}}


def snapshot(agent):
    """What evaluating must not change: the agent's Target state and counters."""
    status = ok(request(agent.admin, "status"))
    return {
        "target": status["target"]["cache"] | {"queued": status["target"]["notifications"]["queued"]},
        "visitor": ok(request(agent.app, "getVisitorIds")),
        "offers": ok(request(agent.admin, "offers.list")),
        "notifications": ok(request(agent.admin, "notifications.status")),
        "calls": status["upstreams"]["target"]["calls"],
    }


def test_execute_answers_the_offer_and_its_notification_and_changes_nothing(agent):
    before = snapshot(agent)
    result = ok(request(agent.admin, "decisioning.evaluate",
                        {"artifact": ARTIFACT, "request": REQUEST, "now": 1795654800000}, timeout_ms=20000))
    response = result["response"]
    assert response["status"] == 200 and response["client"] == "acme"  # the agent's target.clientCode
    (hero,) = response["execute"]["mboxes"]
    assert hero["options"] == [{"type": "html", "content": "<b>Winter sale</b>", "responseTokens": {
        "activity.id": 1001, "activity.decisioningMethod": "on-device"}}], hero
    (notification,) = result["notifications"]
    assert notification["type"] == "display" and notification["timestamp"] == 1795654800000
    assert notification["mbox"] == {"name": "hero"} and notification["tokens"] == ["hero-token"]
    assert result["notificationRequest"]["notifications"] == result["notifications"]
    assert "geoLookup" not in result
    assert snapshot(agent) == before


def test_a_request_needing_geo_says_so_and_geo_answers_it(agent):
    geo_request = {"id": {"tntId": "visitor-1.28_0"}, "context": {"channel": "web", "geo": {"ipAddress": "8.8.8.8"}},
                   "prefetch": {"mboxes": [{"name": "city-offer", "index": 1}]}}
    args = {"artifact": ARTIFACT, "request": geo_request, "now": 1795654800000}
    without = ok(request(agent.admin, "decisioning.evaluate", args, timeout_ms=20000))
    assert without["geoLookup"] == {"ipAddress": "8.8.8.8"}
    assert "options" not in without["response"]["prefetch"]["mboxes"][0]
    answered = ok(request(agent.admin, "decisioning.evaluate",
                          args | {"geo": {"x-geo-city": "SAN FRANCISCO", "x-geo-country-code": "US"}},
                          timeout_ms=20000))
    assert "geoLookup" not in answered
    assert answered["response"]["prefetch"]["mboxes"][0]["options"][0]["content"] == "Hello, San Francisco"


BAD = [
    ({"request": REQUEST}, "artifact", "required"),
    ({"artifact": [1], "request": REQUEST}, "artifact", "must be an object"),
    ({"artifact": ARTIFACT | {"version": "2.0.0"}, "request": REQUEST}, "artifact", "only major version 1"),
    ({"artifact": {"rules": {}}, "request": REQUEST}, "artifact", "no version"),
    ({"artifact": ARTIFACT}, "request", "required"),
    ({"artifact": ARTIFACT, "request": "hero"}, "request", "must be an object"),
    ({"artifact": ARTIFACT, "request": REQUEST, "conf": "acme"}, "conf", "must be an object"),
    ({"artifact": ARTIFACT, "request": REQUEST, "conf": {"client": 7}}, "conf.client", "must be a string"),
    ({"artifact": ARTIFACT, "request": REQUEST, "conf": {"organizationId": True}}, "conf.organizationId",
     "must be a string"),
    ({"artifact": ARTIFACT, "request": REQUEST, "conf": {"propertyToken": 1}}, "conf.propertyToken",
     "must be a string"),
    ({"artifact": ARTIFACT, "request": REQUEST, "conf": {"clientCode": "acme"}}, "conf.clientCode", "allows only"),
    ({"artifact": ARTIFACT, "request": REQUEST, "now": "2026-11-26T01:00:00Z"}, "now", "must be an integer"),
    ({"artifact": ARTIFACT, "request": REQUEST, "now": 1.5}, "now", "must be an integer"),
    ({"artifact": ARTIFACT, "request": REQUEST, "geo": ["SF"]}, "geo", "must be an object"),
    ({"artifact": ARTIFACT, "request": REQUEST, "sessionId": 1}, "sessionId", "must be a string"),
    ({"artifact": ARTIFACT, "request": REQUEST, "mboxes": []}, "mboxes", "allows only"),
]


def test_each_bad_argument_is_refused_with_its_field_and_changes_nothing(agent):
    before = snapshot(agent)
    for args, field, words in BAD:
        reply = request(agent.admin, "decisioning.evaluate", args, timeout_ms=20000)
        assert reply["ok"] is False, (args, reply)
        error = reply["error"]
        assert (error["code"], error.get("field")) == ("invalid_argument", field), (field, reply)
        assert words in error["message"], (field, error)
    reply = request(agent.app, "decisioning.evaluate", {"artifact": ARTIFACT, "request": REQUEST})
    assert reply["error"]["code"] == "not_permitted"
    assert snapshot(agent) == before


def ctl(agent, *args):
    done = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", agent.config_path, *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_preflightctl_prints_the_result_sorted_and_indented(agent, tmp_path):
    artifact, request_file, geo = tmp_path / "rules.json", tmp_path / "request.json", tmp_path / "geo.json"
    artifact.write_text(json.dumps(ARTIFACT))
    request_file.write_text(json.dumps(REQUEST))
    geo.write_text(json.dumps({"x-geo-city": "SAN FRANCISCO"}))
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(artifact), "--request", str(request_file),
                         "--client", "other", "--organization-id", "ORG@AdobeOrg", "--now", "2026-11-26T01:00:00Z",
                         "--geo", str(geo))
    assert code == 0, err
    result = json.loads(out)
    assert out == json.dumps(result, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    assert result["response"]["client"] == "other"
    assert result["notifications"][0]["timestamp"] == 1795654800000  # --now, parsed as UTC

    # A fractional second and an offset are ISO-8601 too.
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(artifact), "--request", str(request_file),
                         "--now", "2026-11-26T02:00:00.250+01:00")
    assert code == 0, err
    assert json.loads(out)["notifications"][0]["timestamp"] == 1795654800250

    # Usage errors: exit 2, saying what is wrong.
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(artifact), "--request", str(request_file),
                         "--now", "yesterday")
    assert code == 2 and "--now" in err and "ISO-8601" in err, (code, err)
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(tmp_path / "missing.json"),
                         "--request", str(request_file))
    assert code == 2 and "--artifact" in err, (code, err)

    # The agent's refusal, with its field: exit 1.
    artifact.write_text(json.dumps(ARTIFACT | {"version": "2.0.0"}))
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(artifact), "--request", str(request_file))
    assert code == 1 and out == "", (code, out, err)
    assert "invalid_argument (artifact)" in err and "only major version 1" in err, err

    # An artifact over the agent's agent.maxBodyBytes: the agent refuses it, preflightctl says which limit.
    artifact.write_text(json.dumps(ARTIFACT | {"padding": "x" * (1 << 20)}))
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", str(artifact), "--request", str(request_file))
    assert code == 1 and "payload_too_large" in err and "agent.maxBodyBytes" in err, (code, err)


def test_adobes_full_sample_artifact_fits_the_default_limit_and_decides(agent, tmp_path):
    """The 750 KB sample artifact (152 rules) goes through preflightctl under the default agent.maxBodyBytes."""
    request_file = tmp_path / "request.json"
    request_file.write_text(json.dumps({"id": {"tntId": "v.28_0"}, "context": {"channel": "web"},
                                        "execute": {"mboxes": [{"name": "mbox-magician", "index": 1}]}}))
    code, out, err = ctl(agent, "decisioning", "evaluate", "--artifact", os.path.join(CONFORMANCE, "artifact.json"),
                         "--request", str(request_file), "--now", "2026-11-26T01:00:00Z", "--timeout", "20")
    assert code == 0, err
    result = json.loads(out)
    (mbox,) = result["response"]["execute"]["mboxes"]
    assert mbox["name"] == "mbox-magician" and mbox["options"], mbox
    assert len(result["notifications"]) == 1


def documented_example():
    """docs/PROTOCOL.md's `decisioning.evaluate` request and reply."""
    text = open(os.path.join(REPO, "docs", "PROTOCOL.md"), encoding="utf-8").read()
    section = text.split("### `decisioning.evaluate`", 1)[1]
    block = re.search(r"```json\n(.*?)```", section, re.S).group(1)
    lines = [json.loads(line) for line in block.strip().split("\n")]
    return lines[0], lines[1]


def test_the_documented_example_is_what_the_agent_answers(agent):
    documented_request, documented_reply = documented_example()
    reply = request(agent.admin, documented_request["cmd"], documented_request["args"], timeout_ms=20000)
    random_ids = {"id", "impressionId"}

    def without_random_ids(value):
        if isinstance(value, dict):
            return {k: ("…" if k in random_ids and isinstance(v, str) else without_random_ids(v))
                    for k, v in value.items()}
        if isinstance(value, list):
            return [without_random_ids(v) for v in value]
        return value

    result = reply["result"]
    for notification in result["notifications"]:
        assert re.fullmatch(r"[0-9a-f-]{36}", notification["id"]) and re.fullmatch(r"[0-9a-f-]{36}",
                                                                                   notification["impressionId"])
    assert without_random_ids(reply["result"]["notifications"]) == without_random_ids(
        documented_reply["result"]["notifications"])
    assert reply["result"]["response"] == documented_reply["result"]["response"]
    assert without_random_ids(reply["result"]["notificationRequest"]["notifications"]) == without_random_ids(
        documented_reply["result"]["notificationRequest"]["notifications"])
    assert reply["ok"] is True and set(reply["result"]) == set(documented_reply["result"])
