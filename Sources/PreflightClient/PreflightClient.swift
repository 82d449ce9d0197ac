import PreflightProtocol
import Synchronization
import ZeroMQ

/// An app's connection to `preflightd`, with calls that read like the Adobe SDKs: Target's prefetch API
/// (`targetPrefetchContent`, `targetLoadRequests`, `targetPrefetchClearCache`), AEP Target's visitor ids
/// (`getThirdPartyId`, `setTntId`, `resetExperience`, ...; see TargetVisitor.swift) and the AccessEnabler's
/// `preauthorize` and entitlement calls (`checkAuthentication`, `getAuthentication`, `getAuthorization`, `logout`,
/// ...; see Entitlement.swift).
///
/// Make one per app and share it: it is safe to use from any number of tasks and threads at once. One
/// dedicated thread owns its ZeroMQ DEALER socket; every call hands its request to that thread and is
/// resumed when the reply with its `id` arrives, so requests from many tasks travel pipelined over one
/// connection and a slow answer (an upstream call) never holds up a fast one (a cached offer).
///
/// Reliability is built in, as the SDKs build it in for Adobe's servers:
/// - every request has a timeout (``Configuration``);
/// - a request without a reply is sent again on a new socket, a bounded number of times ("Lazy Pirate");
///   every command of this client is safe to repeat, so this never does anything twice that matters;
/// - an agent that restarts is reconnected to by itself: the next calls just work;
/// - when the agent cannot be reached, a load answers each request's default content, a preauthorize
///   fails with a `network_error` status, and a visitor id getter answers nil, as the SDKs do when Adobe
///   cannot be reached.
///
/// `close()` (or releasing the last reference) stops the thread; calls still waiting then fail with
/// ``PreflightError/Code-swift.struct/closed`` (loads answer their defaults).
public final class PreflightClient: Sendable {
    /// The agent's app endpoint this client talks to, e.g. `ipc:///run/preflight/app.sock`.
    public let endpoint: String
    /// Timeouts and retries.
    public let configuration: Configuration

    let core: ClientCore
    private let requestorState: Mutex<String?>

    /// Connects to the agent at `endpoint` (by default the app endpoint of `/etc/preflight/preflight.json`).
    ///
    /// Returns at once: the connection is made in the background and remade whenever the agent restarts. An
    /// agent that is not running is not an error here; calls made while it is away answer as the SDKs do
    /// offline.
    ///
    /// - Parameters:
    ///   - endpoint: A ZeroMQ endpoint, normally `ipc://` plus the socket file path.
    ///   - requestor: The Adobe Pass requestor id for `preauthorize` (the AccessEnabler's `setRequestor`); it
    ///     must be one of the agent's `pass.requestors`. May be set later with ``setRequestor(_:)``.
    ///   - configuration: Timeouts and retries.
    /// - Throws: ``PreflightError`` with code `system_error` when the process cannot get a thread, a pipe or a
    ///   ZeroMQ context (out of file descriptors).
    public init(
        endpoint: String = PreflightClient.configuredAppEndpoint(),
        requestor: String? = nil,
        configuration: Configuration = Configuration()
    ) throws(PreflightError) {
        self.endpoint = endpoint
        self.configuration = configuration
        self.requestorState = Mutex(requestor)
        core = try ClientCore(endpoint: endpoint, configuration: configuration)
        let context: ZeroMQContext
        do {
            context = try ZeroMQContext(ioThreads: 1)
        } catch {
            throw PreflightError(code: .systemError, message: "cannot make a ZeroMQ context: \(error)")
        }
        try core.start(context: context)
    }

    deinit {
        core.close()
    }

    /// Stops the client's thread and closes its socket. Calls still waiting end at once (loads with their
    /// default content, preauthorize with `network_error`), and later calls do the same. Idempotent.
    public func close() {
        core.close()
    }

    /// The Adobe Pass requestor `preauthorize` uses (the AccessEnabler's `setRequestor`).
    public func setRequestor(_ requestor: String) {
        requestorState.withLock { $0 = requestor }
    }

    /// The requestor set at init or with ``setRequestor(_:)``.
    public var requestor: String? {
        requestorState.withLock { $0 }
    }

    /// The agent's version and uptime (`ping`): a cheap way to see that the agent is there.
    ///
    /// Safe to repeat; retried as described in ``Configuration``.
    public func ping() async throws(PreflightError) -> AgentInfo {
        let result = try await request(Command.ping.wireName)
        guard let version = result["version"]?.stringValue, let uptime = result["uptimeMs"]?.doubleValue else {
            throw .badReply("ping result without version and uptimeMs")
        }
        return AgentInfo(version: version, uptime: .milliseconds(Int64(uptime)))
    }

    /// Sends any app command of the protocol (docs/PROTOCOL.md) and returns its `result`: for commands this
    /// type has no typed call for. Retried as described in ``Configuration``, so use it only for commands that
    /// are safe to repeat.
    ///
    /// - Throws: ``PreflightError``: the agent's error reply (its code passes through), or why no reply came.
    public func request(_ command: String, args: JSONObject? = nil) async throws(PreflightError) -> JSONValue {
        let timeout =
            Command(wireName: command).map(Self.passCommands.contains) == true
            ? configuration.preauthorizeTimeout : configuration.requestTimeout
        return try await send(command, args: args, timeout: timeout).get()
    }

    /// The commands that wait ``Configuration/preauthorizeTimeout``: those the agent answers within
    /// `pass.answerDeadline`, because they wait on Adobe Pass (or its pacing), and `resetExperience`, which
    /// first sends the queued display notifications to Target.
    static let passCommands: Set<Command> = [
        .preauthorize, .checkAuthentication, .getAuthentication, .cancelAuthentication, .getAuthorization,
        .checkAuthorization, .logout, .getMetadata, .getSelectedProvider, .setSelectedProvider, .resetExperience,
    ]

    /// One request through the I/O thread; the continuation is resumed there. Cancelling the calling task
    /// ends the wait with `.cancelled`.
    func send(_ command: String, args: JSONObject?, timeout: Duration) async -> Result<JSONValue, PreflightError> {
        let id = core.makeID()
        let body = Request(id: id, command: command, args: args).encoded()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                core.submit(
                    ClientCore.Submission(id: id, body: body, timeout: timeout, waiter: ReplyWaiter(continuation))
                )
            }
        } onCancel: {
            core.cancel(id: id)
        }
    }

    /// One request handed to the I/O thread before this returns, for the calls that return at once: so their
    /// requests go out in the order the app made the calls, as the SDKs' calls take effect in order (a
    /// `setThirdPartyId` made before a prefetch is sent before it). `handler` gets the outcome on a new task of
    /// the global concurrent executor, never on the caller's thread or the I/O thread.
    func post(
        _ command: String,
        args: JSONObject?,
        timeout: Duration,
        then handler: @escaping @Sendable (Result<JSONValue, PreflightError>) -> Void
    ) {
        let id = core.makeID()
        let body = Request(id: id, command: command, args: args).encoded()
        let waiter = ReplyWaiter { outcome in
            Task { handler(outcome) }
        }
        core.submit(ClientCore.Submission(id: id, body: body, timeout: timeout, waiter: waiter))
    }
}

/// What `ping` says about the agent.
public struct AgentInfo: Sendable, Hashable {
    /// The agent's version, e.g. `0.1.0`.
    public var version: String
    /// How long the agent has been running.
    public var uptime: Duration
}
