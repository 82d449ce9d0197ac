# The AccessEnabler's flow on preflightd: sign in with a code on a second screen, authorize a resource, play it,
# log out. Its one argument is the agent's configuration file (default /etc/preflight/preflight.json).
import sys

from preflight_client import PreflightClient

config = sys.argv[1] if len(sys.argv) > 1 else None
resource = "movie-1"


def fail(status):
    """Says why a call got no answer (the agent unreachable: `network_error`) and stops."""
    print(f"failure: {status.code} ({status.action}): {status.message}")
    sys.exit(1)


# accessEnabler.setRequestor("acme-requestor"): one of the requestors the agent's configuration lists.
with PreflightClient(config=config, requestor="acme-requestor") as client:
    # check_authentication(): a status with action "authentication" means "sign in first"; any other, "cannot tell".
    authentication = client.check_authentication()
    if authentication.status is not None and authentication.status.action != "authentication":
        fail(authentication.status)
    if authentication.authenticated:
        print(f"Signed in with {authentication.mvpd}")
    else:
        # Subscribe before asking for the code: the agent does not replay events.
        with client.authentication_events() as events:
            result = client.get_authentication()
            if result.failed:
                fail(result.status)
            if result.authenticated:
                print(f"Signed in with {result.mvpd}")
            else:
                print(f"Sign in at {result.pending.url} with code {result.pending.code}", flush=True)
                for event in events:
                    if event.kind == "authenticated":
                        print(f"Signed in with {event.mvpd}")
                        break
                    if event.kind == "failed":
                        print(f"Sign-in failed: {event.reason}" + (f" ({event.code})" if event.code else ""))
                        sys.exit(1)

    # get_authorization(resource): a permit carries the media token the player needs.
    authorization = client.get_authorization(resource)
    if authorization.status is not None:
        fail(authorization.status)
    if not authorization.authorized or authorization.media_token is None:
        error = authorization.error
        print(f"{resource}: denied ({error.code if error else ''}: {error.message if error else ''})")
        sys.exit(1)
    # The token is the app's secret: it goes to the player, never to a log. Only its last characters are shown here.
    print(f"Playing {resource} (token …{authorization.media_token.serialized_token[-4:]})")

    # logout(): the agent signs the box out at once; a url is a browser step Adobe asks the user to finish.
    logout = client.logout()
    if logout.status is not None:
        fail(logout.status)
    if logout.url is not None:
        print(f"Signed out; to finish, open {logout.url}")
    else:
        print("Signed out")
