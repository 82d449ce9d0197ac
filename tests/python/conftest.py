"""pytest fixtures for the agent tests; the helpers live in agent_harness (a unique module name)."""

from agent_harness import agent  # noqa: F401  (re-exported fixture)
