"""Target's geo service as the simulator plays it (`GET /v1/geo`, `x-geo-*` headers), its control endpoint,
faults on it, and the sample artifact that targets by geo."""

from __future__ import annotations

from simharness import clean_sim, sim  # noqa: F401 - fixtures

SAN_FRANCISCO = {"x-geo-latitude": "37.75", "x-geo-longitude": "-122.4", "x-geo-country-code": "US",
                 "x-geo-region-code": "CA", "x-geo-city": "SAN FRANCISCO"}


def geo_headers(response) -> dict:
    return {name.lower(): value for name, value in response.headers.items() if name.lower().startswith("x-geo-")}


def test_the_caller_is_located_in_the_x_geo_headers(sim):
    response = sim.get("/v1/geo")
    assert response.status_code == 200 and response.content == b""
    assert geo_headers(response) == SAN_FRANCISCO
    assert "x-forwarded-for" not in {name.lower() for name in response.headers}
    entry = sim.last_request()
    assert (entry["service"], entry["operation"], entry["status"]) == ("geo", "geo", 200)
    assert sim.get("/_sim/target/geo").json()["lookups"] == 1


def test_an_address_sent_in_x_forwarded_for_is_echoed(sim):
    response = sim.get("/v1/geo", headers={"x-forwarded-for": "203.0.113.9"})
    assert response.headers["x-forwarded-for"] == "203.0.113.9"
    assert geo_headers(response)["x-geo-city"] == "SAN FRANCISCO"


def test_put_sets_the_location_and_absent_fields_are_not_sent(sim):
    put = sim.put("/_sim/target/geo", json={"city": "PORTLAND", "regionCode": "OR", "countryCode": "US"})
    assert put.status_code == 200
    assert put.json()["location"] == {"city": "PORTLAND", "regionCode": "OR", "countryCode": "US"}
    assert geo_headers(sim.get("/v1/geo")) == {"x-geo-city": "PORTLAND", "x-geo-region-code": "OR",
                                               "x-geo-country-code": "US"}
    sim.put("/_sim/target/geo", json={"latitude": 48.85, "longitude": 2.35})
    assert geo_headers(sim.get("/v1/geo")) == {"x-geo-latitude": "48.85", "x-geo-longitude": "2.35"}


def test_a_bad_location_is_refused_and_nothing_changes(sim):
    for body in ({}, {"town": "X"}, {"city": ""}, {"city": "A\r\nx-geo-city: B"}, {"latitude": 91},
                 {"longitude": "2.35"}, {"latitude": True}, [1]):
        response = sim.put("/_sim/target/geo", json=body)
        assert response.status_code == 400, body
    assert geo_headers(sim.get("/v1/geo")) == SAN_FRANCISCO


def test_delete_leaves_the_service_unable_to_locate_anyone(sim):
    assert sim.delete("/_sim/target/geo").json()["location"] is None
    response = sim.get("/v1/geo")
    assert response.status_code == 200 and geo_headers(response) == {}


def test_faults_apply_to_the_geo_service(sim):
    sim.fault(path="/v1/geo", status=503, count=1)
    assert sim.get("/v1/geo").status_code == 503
    assert geo_headers(sim.get("/v1/geo")) == SAN_FRANCISCO


def test_reset_puts_the_service_back_in_san_francisco(sim):
    sim.put("/_sim/target/geo", json={"city": "OSLO"})
    sim.get("/v1/geo")
    sim.reset()
    assert geo_headers(sim.get("/v1/geo")) == SAN_FRANCISCO
    assert sim.get("/_sim/target/geo").json()["lookups"] == 1


def test_the_geo_sample_artifact_targets_by_geo(sim):
    put = sim.put("/_sim/target/artifact?sample=geo")
    assert put.status_code == 200
    artifact = sim.get("/demo/production/v1/rules.json").json()
    assert artifact["geoTargetingEnabled"] is True and artifact["localMboxes"] == ["geo-offer"]
    rule = artifact["rules"]["mboxes"]["geo-offer"][0]
    assert {"==": [{"var": "geo.city"}, "SAN FRANCISCO"]} in rule["condition"]["and"]
    assert sim.put("/_sim/target/artifact?sample=nope").status_code == 400
    assert sim.put("/_sim/target/artifact?sample=geo", json={"version": "1.0.0"}).status_code == 400
