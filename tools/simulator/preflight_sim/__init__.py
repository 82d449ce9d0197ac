"""preflight-sim: a local stand-in for Adobe Target's Delivery API and Adobe Pass (DCR + REST API v2).

It validates every upstream request (and its own responses) against the official OpenAPI files,
records contract violations, and can be scripted to misbehave (latency, errors, broken transports).
"""

VERSION = "1.0.0"
