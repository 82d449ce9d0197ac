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
def target_env():
    """preflight-sim plus a preflightd that uses it as Target, each with its own ports and folder."""
    folder = tempfile.mkdtemp(prefix="pf-tg-", dir="/tmp")
    sim = Simulator(folder)
    agent = start_agent(
        folder,
        target={"serverURL": sim.url, "notificationBatchAge": 0.2, "timeout": 2},
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
    config.addinivalue_line("markers", "slow: builds release binaries (minutes); still runs by default")
