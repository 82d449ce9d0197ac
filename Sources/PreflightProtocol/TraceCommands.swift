/// The `trace` of a `loadRequests` (the Delivery API's `trace`): the authorization token a Target user
/// generates for the account, sent as `trace.authorizationToken`; Target then answers each mbox with
/// its `trace` (what it matched and why).
public struct TargetTrace: Sendable, Hashable {
    public var authorizationToken: String

    /// Longest token, in characters.
    public static let tokenLength = 4096

    public init(authorizationToken: String) {
        self.authorizationToken = authorizationToken
    }

    /// `trace` of `args`: `{"authorizationToken": "..."}`, or nil when absent.
    static func decode(_ args: ArgumentReader) throws(ProtocolError) -> TargetTrace? {
        guard let trace = try args.optionalObject("trace") else { return nil }
        try trace.onlyKeys(["authorizationToken"], describing: "trace")
        let token = try trace.requiredString("authorizationToken")
        guard (1...tokenLength).contains(token.scalarCount) else {
            throw .invalidArgument(
                trace.fieldPath("authorizationToken"),
                "authorizationToken must be 1 to \(tokenLength) characters"
            )
        }
        return TargetTrace(authorizationToken: token)
    }
}

/// A `loadRequests` with `trace`: always answered by Target in a call of its own, never from the cache
/// and never shared with another app's identical load, so that the trace is of this request.
public struct TracedLoadCommand: Sendable, Hashable {
    public var load: LoadRequestsCommand
    public var trace: TargetTrace

    public init(load: LoadRequestsCommand, trace: TargetTrace) {
        self.load = load
        self.trace = trace
    }
}

extension AppCommand {
    /// `loadRequests`: a traced load when the arguments carry `trace`, else a plain one.
    static func loadRequests(_ args: ArgumentReader, maxMboxes: Int) throws(ProtocolError) -> AppCommand {
        let load = try LoadRequestsCommand.decode(args, maxMboxes: maxMboxes)
        guard let trace = try TargetTrace.decode(args) else { return .loadRequests(load) }
        return .tracedLoad(TracedLoadCommand(load: load, trace: trace))
    }
}
