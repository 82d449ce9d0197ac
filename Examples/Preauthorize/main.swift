// The AccessEnabler's preauthorize sample on preflightd: three resources, LOCAL_CACHE disabled.
// Its one argument is the agent's configuration file (default /etc/preflight/preflight.json).
import PreflightClient

let configurationFile = CommandLine.arguments.dropFirst().first ?? PreflightClient.defaultConfigurationFile
// accessEnabler.setRequestor("acme-requestor"): one of the requestors the agent's configuration lists.
let client = try PreflightClient(
    endpoint: PreflightClient.configuredAppEndpoint(configurationFile: configurationFile),
    requestor: "acme-requestor"
)

let request = PreauthorizeRequest.Builder()
    .setResources(["resource1", "resource2", "resource3"])
    .disableFeatures([.localCache])
    .build()

// A command-line program must wait for the callback; an app with a run loop just returns.
await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
    let callback = AccessEnablerCallback<PreauthorizeResponse>(
        onResponse: { response in
            if let status = response.getStatus() {
                // An error from Adobe Pass for the whole request: its HTTP status and code, no decisions.
                print("status: \(status.getStatus()) \(status.getCode() ?? "") (\(status.getAction() ?? ""))")
            }
            for decision in response.getDecisions() {
                if decision.isAuthorized() {
                    print("\(decision.getId()): authorized")
                } else if let error = decision.getError() {
                    print("\(decision.getId()): denied (\(error.getCode() ?? ""): \(error.getMessage() ?? ""))")
                } else {
                    print("\(decision.getId()): denied")
                }
            }
            finished.resume()
        },
        onFailure: { response in
            let status = response.getStatus()
            print("failure: \(status?.getCode() ?? "") (\(status?.getAction() ?? "")): \(status?.getMessage() ?? "")")
            finished.resume()
        }
    )
    client.preauthorize(request, didCompleteWith: callback)
}
