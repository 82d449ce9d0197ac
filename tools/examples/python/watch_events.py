#!/usr/bin/env python3
"""Prints preflightd's events as they happen, one line each: `topic {json body}`.

    python3 watch_events.py                                  # every topic, until Ctrl-C
    python3 watch_events.py --config conf/demo.json --topic offers. --topic auth.
    python3 watch_events.py --endpoint ipc:///run/preflight/events.sock --count 1

Topics are prefixes (`offers.` matches offers.prefetched and offers.cleared). Events published before
this program subscribed are not shown: the agent's event socket does not replay.
"""

import argparse
import json
import sys

from preflight_client import PreflightClient


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="the agent's events endpoint (default: from the configuration file)")
    parser.add_argument("--config", help="the agent's configuration file (default /etc/preflight/preflight.json)")
    parser.add_argument("--topic", action="append", default=[], help="a topic prefix to show (repeatable; default all)")
    parser.add_argument("--count", type=int, help="stop after this many events")
    options = parser.parse_args(argv)
    if options.count is not None and options.count < 1:
        parser.error("--count must be at least 1")

    with PreflightClient(events_endpoint=options.endpoint, config=options.config) as client:
        print(f"watching {client.events_endpoint}", file=sys.stderr, flush=True)
        seen = 0
        with client.events(options.topic) as stream:
            for event in stream:
                print(f"{event.topic} {json.dumps(event.body, sort_keys=True)}", flush=True)
                seen += 1
                if options.count is not None and seen >= options.count:
                    break
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(0)
