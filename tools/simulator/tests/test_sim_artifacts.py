"""Target's on-device decisioning artifacts as the simulator serves them: ETag, 304, property paths, faults."""

from __future__ import annotations

import json

from simharness import SHARED, clean_sim, sim  # noqa: F401 - fixtures

ADOBE_ARTIFACT = SHARED / "conformance" / "target-sdk-testing" / "artifacts" / "TEST_ARTIFACT_AB_SIMPLE.json"


def small_artifact(version: str = "1.0.0", generated: str = "2026-02-01T00:00:00.000Z") -> dict:
    return {"version": version, "meta": {"clientCode": "demo", "environment": "production", "generatedAt": generated},
            "globalMbox": "target-global-mbox", "geoTargetingEnabled": False, "responseTokens": [],
            "remoteMboxes": [], "remoteViews": [], "localMboxes": [], "localViews": [],
            "rules": {"mboxes": {}, "views": {}}}


def test_the_default_artifact_is_served_with_a_strong_etag_and_a_date(sim):
    response = sim.get("/demo/production/v1/rules.json")
    assert response.status_code == 200
    assert response.json()["version"].startswith("1.")
    tag = response.headers["ETag"]
    assert tag.startswith('"') and tag.endswith('"') and not tag.startswith("W/")
    assert response.headers["Date"]
    assert sim.last_request()["service"] == "artifacts"


def test_if_none_match_with_the_current_etag_answers_304(sim):
    tag = sim.get("/demo/production/v1/rules.json").headers["ETag"]
    response = sim.get("/demo/production/v1/rules.json", headers={"If-None-Match": tag})
    assert response.status_code == 304 and response.content == b""
    assert response.headers["ETag"] == tag
    assert sim.get("/demo/production/v1/rules.json", headers={"If-None-Match": '"other"'}).status_code == 200


def test_a_new_artifact_changes_the_etag(sim):
    old = sim.get("/demo/production/v1/rules.json").headers["ETag"]
    put = sim.put("/_sim/target/artifact", json=small_artifact(generated="2026-03-01T00:00:00.000Z"))
    assert put.status_code == 200
    response = sim.get("/demo/production/v1/rules.json", headers={"If-None-Match": old})
    assert response.status_code == 200
    assert response.headers["ETag"] == put.json()["etag"] != old
    assert response.json()["meta"]["generatedAt"] == "2026-03-01T00:00:00.000Z"
    assert sim.get("/_sim/target/artifact").json()["etag"] == put.json()["etag"]


def test_a_property_has_its_own_artifact(sim):
    assert sim.get("/demo/production/v1/prop-1/rules.json").status_code == 404
    assert sim.put("/_sim/target/artifact?propertyToken=prop-1", json=small_artifact("1.1.0")).status_code == 200
    assert sim.get("/demo/production/v1/prop-1/rules.json").json()["version"] == "1.1.0"
    assert sim.get("/demo/production/v1/rules.json").json()["version"] == "1.0.0"
    assert sim.delete("/_sim/target/artifact?propertyToken=prop-1").json()["removed"] is True
    assert sim.get("/demo/production/v1/prop-1/rules.json").status_code == 404


def test_any_version_is_served_as_given(sim):
    sim.put("/_sim/target/artifact", json=small_artifact("2.0.0"))
    assert sim.get("/demo/staging/v1/rules.json").json()["version"] == "2.0.0"


def test_a_fault_on_the_artifact_path(sim):
    sim.fault(path="/demo/production/v1/rules.json", status=503, count=1)
    assert sim.get("/demo/production/v1/rules.json").status_code == 503
    assert sim.get("/demo/production/v1/rules.json").status_code == 200


def test_adobes_sample_artifact_round_trips(sim):
    if not ADOBE_ARTIFACT.is_file():
        return
    document = json.loads(ADOBE_ARTIFACT.read_text())
    assert sim.put("/_sim/target/artifact", json=document).status_code == 200
    assert sim.get("/demo/production/v1/rules.json").json() == document


def test_reset_restores_the_default_artifact(sim):
    sim.put("/_sim/target/artifact", json=small_artifact("1.9.0"))
    sim.reset()
    assert sim.get("/demo/production/v1/rules.json").json()["version"] == "1.0.0"


def test_rules_bin_is_the_json_obfuscated_with_the_organization_and_its_key(sim):
    organization = "ORG123@AdobeOrg"
    assert sim.put("/_sim/target/artifactOrganization", json={"organizationId": organization}).status_code == 200
    plain = sim.get("/demo/production/v1/rules.json").content
    response = sim.get("/demo/production/v1/rules.bin")
    assert response.status_code == 200
    data = response.content
    assert data[:8] == b"TDA:1   "
    secret = organization.encode() + data[8:40]
    assert bytes(b ^ secret[i % len(secret)] for i, b in enumerate(data[40:])) == plain
    tag = response.headers["ETag"]
    assert sim.get("/demo/production/v1/rules.bin", headers={"If-None-Match": tag}).status_code == 304
