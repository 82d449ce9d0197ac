// The AccessEnabler's flow on preflightd: sign in with a code on a second screen, authorize a resource, play it,
// log out. Its one argument is the agent's configuration file (default /etc/preflight/preflight.json).
import PreflightClient

#if canImport(Glibc)
import Glibc  // exit, fflush
#elseif canImport(Darwin)
import Darwin
#endif

let configurationFile = CommandLine.arguments.dropFirst().first ?? PreflightClient.defaultConfigurationFile
let resource = "movie-1"
// accessEnabler.setRequestor("acme-requestor"): one of the requestors the agent's configuration lists.
let client = try PreflightClient(
    endpoint: PreflightClient.configuredAppEndpoint(configurationFile: configurationFile),
    requestor: "acme-requestor"
)

/// Says why a call got no answer (the agent unreachable: `network_error`) and stops.
func fail(_ status: Status) -> Never {
    print("failure: \(status.getCode() ?? "") (\(status.getAction() ?? "")): \(status.getMessage() ?? "")")
    exit(1)
}

// checkAuthentication(): a status with action "authentication" means "sign in first"; any other, "cannot tell".
let authentication = await client.checkAuthentication()
if let status = authentication.status, status.getAction() != "authentication" {
    fail(status)
}
if let mvpd = authentication.mvpd, authentication.authenticated {
    print("Signed in with \(mvpd)")
} else {
    // Subscribe before asking for the code: the agent does not replay events.
    let events = try client.authenticationEvents(
        endpoint: PreflightClient.configuredEventsEndpoint(configurationFile: configurationFile)
    )
    switch await client.getAuthentication() {
    case .authenticated(let mvpd, _):
        print("Signed in with \(mvpd)")
    case .failure(let status):
        fail(status)
    case .code(let signIn):
        print("Sign in at \(signIn.url) with code \(signIn.code)")
        fflush(nil)  // shown now, even when the output goes to a pipe (nil: every stream)
        waiting: for await event in events {
            switch event {
            case .authenticated(let mvpd, _):
                print("Signed in with \(mvpd)")
                break waiting
            case .failed(let reason, let code, _):
                print("Sign-in failed: \(reason)\(code.map { " (\($0))" } ?? "")")
                exit(1)
            default:
                continue
            }
        }
    }
}

// getAuthorization(resource): a permit carries the media token the player needs.
let authorization = await client.getAuthorization(resource: resource)
if let status = authorization.status {
    fail(status)
}
guard authorization.authorized, let token = authorization.mediaToken else {
    print("\(resource): denied (\(authorization.error?.getCode() ?? ""): \(authorization.error?.getMessage() ?? ""))")
    exit(1)
}
// The token is the app's secret: it goes to the player, never to a log. Only its last characters are shown here.
print("Playing \(resource) (token …\(token.serializedToken.suffix(4)))")

// logout(): the agent signs the box out at once; a url is a browser step Adobe asks the user to finish.
let logout = await client.logout()
if let status = logout.status {
    fail(status)
}
if let url = logout.url {
    print("Signed out; to finish, open \(url)")
} else {
    print("Signed out")
}
