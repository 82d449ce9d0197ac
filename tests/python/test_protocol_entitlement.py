"""docs/PROTOCOL.md's entitlement flow is true: each request it shows is sent, in order, to a real preflightd
with preflight-sim as Adobe Pass, and each reply has the shape and the values the doc shows (codes, times,
tokens and ids vary from run to run: those are compared by kind)."""

import json
import os
import re
import shutil
import tempfile

from agent_harness import REPO, Events, Simulator, request, same_as_documented, start_pass_agent, stop_agent

# Values that differ on every run: compared by type (and, for the URLs, by their path).
VARYING = {"code", "notBefore", "notAfter", "serializedToken", "userID", "householdID"}


def documented_flow():
    text = open(os.path.join(REPO, "docs", "PROTOCOL.md")).read()
    block = re.search(r"<!-- entitlement-flow -->\n```text\n(.*?)```", text, re.S)
    assert block, "docs/PROTOCOL.md lost its entitlement-flow block"
    steps = []
    for line in block.group(1).splitlines():
        if line.startswith("→ "):
            steps.append({"request": json.loads(line[2:]), "result": None, "then_sign_in": False})
        elif line.startswith("← "):
            steps[-1]["result"] = json.loads(line[2:])
        elif "signs in" in line:
            steps[-1]["then_sign_in"] = True
    return steps


def varies(path, documented, actual):
    if path.rsplit(".", 1)[-1] in VARYING:
        assert type(actual) is type(documented), (path, documented, actual)
        return True
    if path.endswith(".url") and documented.startswith("https://sp.auth.adobe.com/api/v2/"):
        # The doc shows Adobe's production address; the test's server is the simulator.
        assert actual.endswith(documented.split("/api/v2/", 1)[1].rsplit("/", 1)[0] + "/" + actual.rsplit("/", 1)[1])
        return True
    return False


def test_the_documented_entitlement_flow_answers_as_shown():
    folder = tempfile.mkdtemp(prefix="pf-pe-", dir="/tmp")
    sim = Simulator(folder)
    agent = start_pass_agent(folder, sim, signInPollInterval=1)
    events = Events(agent, b"auth.", confirm=True)
    try:
        steps = documented_flow()
        assert len(steps) >= 10
        for step in steps:
            sent = step["request"]
            reply = request(agent.app, sent["cmd"], sent["args"], req_id=sent["id"], timeout_ms=30000)
            assert reply["ok"] is True and reply["id"] == sent["id"], reply
            same_as_documented(step["result"], reply["result"], varies)
            if step["then_sign_in"]:
                code = reply["result"]["code"]
                sim.call("POST", f"/_sim/pass/sessions/{code}/signin", {"attributes": {"zip": "10001"}})
                events.wait_for("auth.authenticated")
        assert sim.call("GET", "/_sim/violations")["count"] == 0
    finally:
        events.close()
        stop_agent(agent)
        sim.stop()
        shutil.rmtree(folder, ignore_errors=True)
