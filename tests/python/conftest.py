"""pytest fixtures for the agent tests; the helpers live in agent_harness (a unique module name)."""

import shutil
import tempfile

import pytest

from agent_harness import (  # noqa: F401  (agent: re-exported fixture)
    TEST_SOFTWARE_STATEMENT,
    Simulator,
    agent,
    start_agent,
    stop_agent,
)


class TargetSetup:
    def __init__(self, folder, sim, agent):
        self.folder = folder
        self.sim = sim
        self.agent = agent


@pytest.fixture
def target_env(request):
    """preflight-sim plus a preflightd that uses it as Target, each with its own ports and folder.
    `@pytest.mark.target_settings(key=value, ...)` overrides the agent's `target` settings for one test."""
    folder = tempfile.mkdtemp(prefix="pf-tg-", dir="/tmp")
    sim = Simulator(folder)
    marker = request.node.get_closest_marker("target_settings")
    agent = start_agent(
        folder,
        target={"serverURL": sim.url, "notificationBatchAge": 0.2, "timeout": 2, **(marker.kwargs if marker else {})},
        pass_={"softwareStatement": TEST_SOFTWARE_STATEMENT},
    )
    setup = TargetSetup(folder, sim, agent)
    yield setup
    stop_agent(setup.agent)
    violations = sim.call("GET", "/_sim/violations")
    sim.stop()
    shutil.rmtree(folder, ignore_errors=True)
    assert violations["count"] == 0, violations


def pytest_configure(config):
    config.addinivalue_line("markers", "target_settings(**settings): the target_env agent's target settings")
    config.addinivalue_line("markers", "slow: builds release binaries (minutes); still runs by default")
