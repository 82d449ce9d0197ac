#!/usr/bin/env python3
"""The Target SDK's prefetch example, on preflightd: prefetch `logo` and `buttonColor`, then load them.

    python3 prefetch_and_load.py                          # the agent of /etc/preflight/preflight.json
    python3 prefetch_and_load.py --config conf/demo.json  # the agent tools/demo starts
    python3 prefetch_and_load.py --endpoint ipc:///run/preflight/app.sock

Prints whether the prefetch succeeded, then one line per mbox: `name (source): content`, where source
is `cache` (served from the agent's prefetch cache), `network` or `default`.
"""

import argparse
import sys

from preflight_client import PreflightClient, TargetPrefetch, TargetRequest


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="the agent's app endpoint (default: from the configuration file)")
    parser.add_argument("--config", help="the agent's configuration file (default /etc/preflight/preflight.json)")
    parser.add_argument("--timeout", type=float, help="seconds to wait for each reply")
    options = parser.parse_args(argv)

    with PreflightClient(options.endpoint, config=options.config, timeout=options.timeout) as client:
        # targetPrefetchContent: two mboxes with mbox, product and order parameters, one profile.
        mboxes = [
            TargetPrefetch(
                "logo",
                mbox_parameters={"status": "platinum"},
                product_parameters={"id": "24D3412", "categoryId": "Books"},
                order_parameters={"id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"},
            ),
            TargetPrefetch(
                "buttonColor",
                mbox_parameters={"userType": "Paid"},
                product_parameters={"id": "764334", "categoryId": "Online"},
                order_parameters={"id": "4t4uxksa", "total": "54.90", "purchasedProductIds": ["id1", "id2"]},
            ),
        ]
        success = client.prefetch(mboxes, profile_parameters={"age": "20-32"})
        print(f"prefetch: {'success' if success else 'failed'}", flush=True)

        # targetLoadRequests: each callback gets its mbox's content, from the cache after the prefetch.
        def show_logo(content):
            print(f"callback logo: {content}")

        def show_button_color(content):
            print(f"callback buttonColor: {content}")

        requests = [
            TargetRequest("logo", "BlueWhale", mbox_parameters={"status": "platinum"}, callback=show_logo),
            TargetRequest("buttonColor", "red", callback=show_button_color),
        ]
        for loaded in client.load_requests(requests, profile_parameters={"age": "20-32"}):
            print(f"{loaded.name} ({loaded.source}): {loaded.content}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
