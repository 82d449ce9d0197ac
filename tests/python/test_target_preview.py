"""Target's QA mode for the whole box (admin `target.preview`, `preflightctl target preview`) and traced loads
(`loadRequests` with `trace`, `preflightctl offers load --trace`): a real preflightd, preflight-sim as the Delivery
API with a registered preview and trace token, and the examples of docs/PROTOCOL.md and docs/OPERATIONS.md run as
they are shown."""

import json
import os
import re
import shlex
import subprocess

import pytest

from agent_harness import REPO, Events, bin_dir, ok, read_log, request, same_as_documented, wait_until

PREVIEW_TOKEN = "qa-token-1"
TRACE_TOKEN = "trace-token-1"
PREVIEW_LOGO = '<img src="https://example.com/logo-preview.png">'
LIVE_LOGO = '<img src="https://example.com/logo-platinum.png">'


def register(sim):
    """The marketer's preview (its activity serves `logo`) and the account's trace token, as Target knows them."""
    sim.call("PUT", "/_sim/target/preview", {"token": PREVIEW_TOKEN, "offers": {"logo": {"type": "html",
                                                                                          "content": PREVIEW_LOGO}}})
    sim.call("PUT", "/_sim/target/traceToken", {"token": TRACE_TOKEN})


def preview(agent, args=None):
    return ok(request(agent.admin, "target.preview", args))


def load(agent, name="logo", **more):
    return ok(request(agent.app, "loadRequests", {"requests": [{"name": name, "defaultContent": "d"}], **more}))


def last_seq(sim):
    return sim.call("GET", "/_sim/requests")["lastSeq"]


def delivery_bodies(sim, since):
    """The bodies of the Delivery requests the simulator received after `since`, oldest first."""
    entries = sim.call("GET", f"/_sim/requests?since={since}&service=target")["requests"]
    return [entry["body"] for entry in entries if entry["path"] == "/rest/v1/delivery"]


def ctl(env, *args):
    done = subprocess.run([os.path.join(bin_dir(), "preflightctl"), "--config", env.agent.config_path, *args],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


# The wire ----------------------------------------------------------------------------------------

def test_a_preview_serves_every_app_its_offers_and_every_request_carries_its_token(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    events = Events(agent, confirm=True)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}, {"name": "hero"}]}))["success"]
    since = last_seq(sim)

    started = preview(agent, {"token": PREVIEW_TOKEN, "minutes": 30})
    assert started["active"] is True and started["token"] == "qa-t…" and started["cleared"] == 2
    assert 0 < started["expiresInMs"] <= 1_800_000
    assert events.wait_for("target.preview")["state"] == "on"
    assert events.wait_for("offers.cleared")["cleared"] == 2
    assert ok(request(agent.admin, "status"))["target"]["preview"]["token"] == "qa-t…"
    assert ok(request(agent.admin, "offers.list"))["offers"] == []

    # Apps get the preview's offer for its mbox, and the live activity for the others.
    assert load(agent)["contents"][0] == {"name": "logo", "content": PREVIEW_LOGO, "source": "network"}
    assert load(agent, "hero")["contents"][0]["source"] == "network"
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    assert load(agent)["contents"][0] == {"name": "logo", "content": PREVIEW_LOGO, "source": "cache"}
    # The cached load's display notification goes on its own (the batch age is short), in QA mode too.
    wait_until("the display notification to reach Target",
               lambda: sim.call("GET", "/_sim/stats")["displayNotifications"] == 1)
    bodies = delivery_bodies(sim, since)
    assert len(bodies) >= 4
    assert all(body.get("qaMode") == {"token": PREVIEW_TOKEN} for body in bodies), bodies
    assert any("notifications" in body and "prefetch" not in body and "execute" not in body for body in bodies)

    # A display the app deferred for the preview's offer goes with the preview: its later report counts nothing.
    assert load(agent, notifyDisplay=False)["contents"][0]["source"] == "cache"

    ended = preview(agent, {"end": True})
    assert ended == {"active": False, "ended": True, "cleared": 1}
    assert ok(request(agent.app, "displayedLocations", {"names": ["logo"]})) == {"notified": [], "skipped": ["logo"]}
    off = events.wait_for("target.preview", lambda body: body["state"] == "off")
    assert (off["reason"], off["token"], off["cleared"]) == ("ended", "qa-t…", 1)
    assert preview(agent) == {"active": False}
    assert ok(request(agent.admin, "offers.list"))["offers"] == []
    assert load(agent)["contents"][0] == {"name": "logo", "content": LIVE_LOGO, "source": "network"}
    assert "qaMode" not in delivery_bodies(sim, since)[-1]
    log = read_log(target_env.folder)
    assert "Target preview on" in log and "Target preview ended" in log and PREVIEW_TOKEN not in log
    events.close()


def test_a_preview_ends_by_itself_when_its_time_is_up(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    events = Events(agent, confirm=True)
    started = preview(agent, {"token": PREVIEW_TOKEN, "seconds": 2})
    assert started["active"] is True and 0 < started["expiresInMs"] <= 2000
    off = events.wait_for("target.preview", lambda body: body["state"] == "off", timeout=60)
    assert off["reason"] == "expired"
    # Dropped at the start and at the end.
    assert len(events.bodies("offers.cleared")) == 2
    assert ok(request(agent.admin, "status"))["target"]["preview"] == {"active": False}
    since = last_seq(sim)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    assert [body.get("qaMode") for body in delivery_bodies(sim, since)] == [None]
    assert load(agent)["contents"][0] == {"name": "logo", "content": LIVE_LOGO, "source": "cache"}
    events.close()


# Only notifications queued by a cached load, which then ride on the refused request: none go on their own.
@pytest.mark.target_settings(notificationBatchAge=3600)
def test_a_token_target_refuses_ends_the_preview_and_loses_no_display(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    assert load(agent)["contents"][0]["source"] == "cache"
    events = Events(agent, b"target.", confirm=True)
    assert preview(agent, {"token": "stale-token-9"})["active"] is True

    # Refused, then sent again at once without the token: the app gets the live offer.
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    assert load(agent)["contents"][0] == {"name": "logo", "content": LIVE_LOGO, "source": "cache"}
    off = events.wait_for("target.preview", lambda body: body["state"] == "off")
    assert (off["reason"], off["token"]) == ("refused", "stal…")
    assert preview(agent) == {"active": False}
    stats = sim.call("GET", "/_sim/stats")
    assert stats["qaModeRefusals"] == 1 and stats["displayNotifications"] == 1
    queue = ok(request(agent.admin, "notifications.status"))
    assert queue["refused"] == 0 and queue["sent"] == 1
    assert "Target refused the preview's QA mode token" in read_log(target_env.folder)
    events.close()


def test_a_traced_load_goes_to_target_and_carries_its_trace(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    since = last_seq(sim)
    traced = load(agent, trace={"authorizationToken": TRACE_TOKEN}, withData=True)["contents"][0]
    # Not from the cache, although logo is cached: Target's answer, with Target's trace of it.
    assert (traced["source"], traced["content"], traced["data"]) == ("network", LIVE_LOGO, {})
    assert traced["trace"]["request"]["mbox"] == {"name": "logo", "index": 0, "type": "execute"}
    assert traced["trace"]["activity"]["matched"] is True
    bodies = delivery_bodies(sim, since)
    assert [body["trace"] for body in bodies] == [{"authorizationToken": TRACE_TOKEN}]
    assert ok(request(agent.admin, "stats"))["offers"]["hits"] == 0
    # The plain load after it is served from the cache, as ever.
    assert load(agent)["contents"][0]["source"] == "cache"
    assert "trace" not in load(agent)["contents"][0]

    # Under a preview, the trace says so.
    preview(agent, {"token": PREVIEW_TOKEN})
    traced = load(agent, trace={"authorizationToken": TRACE_TOKEN})["contents"][0]
    assert traced["content"] == PREVIEW_LOGO and traced["trace"]["request"]["qaMode"] is True

    # A token Target does not accept: Target's answer as it gives it, without a trace (and the simulator's
    # advisory saying why, the one violation of this test).
    wrong = load(agent, trace={"authorizationToken": "expired-token"})["contents"][0]
    assert wrong == {"name": "logo", "content": PREVIEW_LOGO, "source": "network", "trace": None}
    violations = sim.call("GET", "/_sim/violations")["violations"]
    assert [v["messages"] for v in violations] == [
        ["advisory: $.trace.authorizationToken: not the authorization token Target accepts; the response has no trace"]]
    sim.call("DELETE", "/_sim/violations")

    refused = request(agent.app, "loadRequests", {"requests": [{"name": "logo", "defaultContent": "d"}],
                                                   "trace": {"authorizationToken": ""}})
    assert refused["ok"] is False and refused["error"]["field"] == "trace.authorizationToken"


def test_preview_arguments_are_checked_and_admin_only(target_env):
    agent = target_env.agent
    for args, field in [({"token": PREVIEW_TOKEN, "minutes": 0}, "minutes"),
                        ({"token": PREVIEW_TOKEN, "minutes": 2, "seconds": 2}, "seconds"),
                        ({"minutes": 5}, "token"), ({"token": "a b"}, "token"), ({"end": True, "token": "x"}, "token")]:
        reply = request(agent.admin, "target.preview", args)
        assert reply["ok"] is False and reply["error"]["code"] == "invalid_argument", (args, reply)
        assert reply["error"]["field"] == field, (args, reply)
    assert request(agent.app, "target.preview")["error"]["code"] == "not_permitted"
    assert preview(agent) == {"active": False}


# preflightctl ------------------------------------------------------------------------------------

def test_preflightctl_target_preview_starts_shows_and_ends_a_preview(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    status, out, _ = ctl(target_env, "target", "preview")
    assert (status, out) == (0, "No preview: apps get Target's live activities.\n")
    link = f"https://www.example.com/?at_preview_token={PREVIEW_TOKEN.replace('-', '%2D')}&at_preview_index=1_1"
    status, out, _ = ctl(target_env, "target", "preview", "--token", link, "--minutes", "5")
    assert status == 0 and re.fullmatch(
        r"Preview on, token qa-t…, ends in 5m 0s \(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\): every app gets Target's QA "
        r"mode offers; 0 cached offers dropped\.\n", out), out
    since = last_seq(sim)
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}]}))["success"]
    # The link's token, percent-decoded, is what Target gets.
    assert delivery_bodies(sim, since)[0]["qaMode"] == {"token": PREVIEW_TOKEN}

    status, out, _ = ctl(target_env, "status")
    assert status == 0 and re.search(r"^Target preview +on, token qa-t…, ends in \d+m \d+s \(.*\): every app gets "
                                     r"Target's QA mode offers$", out, re.M), out
    status, out, _ = ctl(target_env, "--json", "target", "preview")
    shown = json.loads(out)
    assert status == 0 and shown["active"] is True and shown["token"] == "qa-t…"
    status, out, _ = ctl(target_env, "target", "preview", "--end")
    assert (status, out) == (0, "Preview ended; 1 cached offer dropped.\n")
    status, out, _ = ctl(target_env, "target", "preview", "--end")
    assert (status, out) == (0, "No preview was on.\n")
    status, out, _ = ctl(target_env, "status")
    assert "Target preview" not in out

    for args in (["--end", "--token", "x"], ["--minutes", "5"], ["--token", "x", "--minutes", "0"]):
        status, _, err = ctl(target_env, "target", "preview", *args)
        assert status == 2, (args, err)


# The docs' examples ------------------------------------------------------------------------------

VARYING = {"expiresInMs", "expiresAtMs", "sessionId", "requestId", "tntId"}


def varies(path, documented, actual):
    if path.rsplit(".", 1)[-1] not in VARYING:
        return False
    assert type(actual) is type(documented), (path, documented, actual)
    if path.endswith(".expiresInMs"):
        assert 0 < actual <= 1_800_000, (path, actual)  # the flow's preview is 30 minutes
    return True


def documented_block(doc, marker):
    text = open(os.path.join(REPO, "docs", doc), encoding="utf-8").read()
    block = re.search(rf"<!-- {marker} -->\n```\w*\n(.*?)```", text, re.S)
    assert block, f"docs/{doc} lost its {marker} block"
    return block.group(1)


def test_the_documented_preview_flow_answers_as_shown(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    steps = []
    for line in documented_block("PROTOCOL.md", "preview-flow").splitlines():
        if line.startswith("→ "):
            steps.append([json.loads(line[2:]), None])
        elif line.startswith("← "):
            steps[-1][1] = json.loads(line[2:])
    assert [sent["cmd"] for sent, _ in steps].count("target.preview") == 3
    for sent, result in steps:
        reply = request(agent.admin, sent["cmd"], sent.get("args"), req_id=sent["id"], timeout_ms=30000)
        assert reply["ok"] is True and reply["id"] == sent["id"], reply
        same_as_documented(result, reply["result"], varies)


def masked(text):
    """What varies from run to run in preflightctl's output: times, durations left, ids Target makes."""
    text = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", "<datetime>", text)
    text = re.sub(r"ends in \d+m \d+s", "ends in <duration>", text)
    text = re.sub(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", "<uuid>", text)
    return re.sub(r"\b[0-9a-f]{32}\.\d+_\d+\b", "<tntId>", text)


def run_documented_session(env, block):
    """Runs each `$ preflightctl ...` line of `block` and returns (documented, printed) outputs, masked."""
    documented, printed = [], []
    for command in re.split(r"^\$ ", block, flags=re.M)[1:]:
        line, _, expected = command.partition("\n")
        args = shlex.split(line)
        assert args[0] == "preflightctl", line
        status, out, err = ctl(env, *args[1:])
        assert status == 0, (line, err)
        documented.append(masked(expected))
        printed.append(masked(out))
    return documented, printed


def test_the_documented_preflightctl_preview_and_trace_sessions_print_what_the_guide_shows(target_env):
    sim, agent = target_env.sim, target_env.agent
    register(sim)
    # What an app had prefetched before the technician came.
    assert ok(request(agent.app, "prefetch", {"mboxes": [{"name": "logo"}, {"name": "buttonColor"}]}))["success"]
    documented, printed = run_documented_session(target_env, documented_block("OPERATIONS.md", "preview-session"))
    assert printed == documented
    documented, printed = run_documented_session(target_env, documented_block("OPERATIONS.md", "trace-session"))
    assert printed == documented
    # The second traced load's token is not Target's: the simulator said so, as expected.
    violations = sim.call("GET", "/_sim/violations")["violations"]
    assert len(violations) == 1 and "trace.authorizationToken" in violations[0]["messages"][0]
    sim.call("DELETE", "/_sim/violations")
