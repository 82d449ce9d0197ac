#!/usr/bin/env python3
"""The AccessEnabler's preauthorize sample, on preflightd: three resources, LOCAL_CACHE disabled.

    python3 preauthorize.py                                   # the agent of /etc/preflight/preflight.json
    python3 preauthorize.py --config conf/demo.json           # the agent tools/demo starts
    python3 preauthorize.py --endpoint ipc:///run/preflight/app.sock --requestor acme-requestor movie1 movie2

Prints one line per decision (`resource1: authorized`, or `resource2: denied` with Adobe's error), or
the failure (`failure: authentication_session_missing (authentication): ...`). Exit status 0 when
Adobe Pass answered with decisions, 1 on a failure (onFailure), 2 on a usage error.
"""

import argparse
import sys

from preflight_client import Feature, PreflightClient


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("resources", nargs="*", default=["resource1", "resource2", "resource3"],
                        help="resource ids (default: resource1 resource2 resource3)")
    parser.add_argument("--endpoint", help="the agent's app endpoint (default: from the configuration file)")
    parser.add_argument("--config", help="the agent's configuration file (default /etc/preflight/preflight.json)")
    parser.add_argument("--requestor", help="the Adobe Pass requestor (default: the only one in the configuration)")
    parser.add_argument("--timeout", type=float, help="seconds to wait for each reply")
    options = parser.parse_args(argv)

    with PreflightClient(options.endpoint, config=options.config, requestor=options.requestor,
                         timeout=options.timeout) as client:
        if not client.requestor:
            parser.error("--requestor is needed (the configuration file does not name exactly one)")
        response = client.preauthorize(options.resources, disable_features=[Feature.LOCAL_CACHE])

    if response.failed:
        status = response.status
        print(f"failure: {status.code} ({status.action}): {status.message}")
        return 1
    if response.status is not None:
        # Adobe Pass answered with an error for the whole request (HTTP status and code).
        status = response.status
        print(f"status: {status.status} {status.code} ({status.action}): {status.message}")
    for decision in response.decisions:
        if decision.authorized:
            print(f"{decision.id}: authorized")
        elif decision.error is not None:
            print(f"{decision.id}: denied ({decision.error.code}: {decision.error.message})")
        else:
            print(f"{decision.id}: denied")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
