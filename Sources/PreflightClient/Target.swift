import PreflightProtocol

/// One mbox to prefetch: the Target SDK's `TargetPrefetchObject`.
///
/// Parameters are string to string, as in the SDK. `productParameters` takes `id` and `categoryId`;
/// `orderParameters` takes `id`, `total` (a number as a string, e.g. `"344.30"`) and `purchasedProductIds`
/// (comma-separated, e.g. `"34, 125, 99"`). The agent checks every limit and refuses the whole command
/// with `invalid_argument` naming the field (docs/PROTOCOL.md, "Argument rules").
public struct TargetPrefetchObject: Sendable, Hashable {
    /// The mbox name (1 to 250 characters).
    public var name: String
    /// Mbox parameters (`status=platinum`); names must not start with `profile.`.
    public var mboxParameters: [String: String]?
    /// Product parameters: only `id` and `categoryId`.
    public var productParameters: [String: String]?
    /// Order parameters: only `id`, `total` and `purchasedProductIds`.
    public var orderParameters: [String: String]?

    /// An mbox to prefetch, as `TargetPrefetchObject(name:mboxParameters:)` in the SDK.
    public init(name: String, mboxParameters: [String: String]? = nil) {
        self.name = name
        self.mboxParameters = mboxParameters
    }
}

/// One mbox to load: the Target SDK's `TargetRequestObject`.
///
/// `callback` is called once with the content: the offer when Target has one (from the prefetch cache or
/// fetched now), else `defaultContent`. It is never called with nil; its type is the SDK's so that
/// ported code compiles unchanged. It runs on a task of the global concurrent executor, not on a main actor.
public struct TargetRequestObject: Sendable {
    /// The mbox name (1 to 250 characters).
    public var name: String
    /// What the app shows when Target has nothing for it or cannot be reached (may be empty).
    public var defaultContent: String
    /// Mbox parameters (`status=platinum`).
    public var mboxParameters: [String: String]?
    /// Product parameters: only `id` and `categoryId`.
    public var productParameters: [String: String]?
    /// Order parameters: only `id`, `total` and `purchasedProductIds`.
    public var orderParameters: [String: String]?
    /// Called with the content once it is ready.
    public var callback: (@Sendable (String?) -> Void)?
    /// AEP's `contentWithDataCallback`: called with the content and what Target sent with it (never nil;
    /// empty for default content). A load with such a request asks the agent for the data (`withData`).
    public var contentWithDataCallback: (@Sendable (String?, TargetContentData?) -> Void)?

    /// A request, as `TargetRequestObject(name:defaultContent:mboxParameters:callback:)` in the SDK.
    public init(
        name: String,
        defaultContent: String,
        mboxParameters: [String: String]? = nil,
        callback: (@Sendable (String?) -> Void)? = nil
    ) {
        self.name = name
        self.defaultContent = defaultContent
        self.mboxParameters = mboxParameters
        self.callback = callback
    }

    /// A request whose callback also gets the offer's data, as AEP's
    /// `TargetRequest(mboxName:defaultContent:targetParameters:contentWithDataCallback:)`.
    public init(
        name: String,
        defaultContent: String,
        mboxParameters: [String: String]? = nil,
        contentWithDataCallback: @escaping @Sendable (String?, TargetContentData?) -> Void
    ) {
        self.name = name
        self.defaultContent = defaultContent
        self.mboxParameters = mboxParameters
        self.contentWithDataCallback = contentWithDataCallback
    }
}

/// What Target sent with an offer (docs/PROTOCOL.md, `loadRequests`, `withData`): the data AEP's
/// `contentWithDataCallback` gets. A member is nil when Target did not send it; all are nil for default content.
/// Values that are not strings in Target's answer (a response token listing several values) are their JSON text.
public struct TargetContentData: Sendable, Hashable {
    /// The account's response tokens (`activity.id`, `activity.name`, `experience.name`, `option.id`, ...):
    /// AEP's `responseTokens`.
    public var responseTokens: [String: String]?
    /// The Analytics for Target payload (when `target.analyticsLogging` is `client_side`): AEP's
    /// `analytics.payload`.
    public var analyticsPayload: [String: String]?
    /// The click metric's Analytics for Target payload: AEP's `clickmetric.analytics.payload`.
    public var clickMetricAnalyticsPayload: [String: String]?

    /// A data value (tests and app-side fakes make them).
    public init(
        responseTokens: [String: String]? = nil,
        analyticsPayload: [String: String]? = nil,
        clickMetricAnalyticsPayload: [String: String]? = nil
    ) {
        self.responseTokens = responseTokens
        self.analyticsPayload = analyticsPayload
        self.clickMetricAnalyticsPayload = clickMetricAnalyticsPayload
    }
}

/// How a load goes, beyond its requests: the options AEP's `retrieveLocationContent` has in other forms.
public struct TargetLoadOptions: Sendable, Hashable {
    /// `false` defers the display notification of content from the prefetch cache until the app reports it
    /// shown with ``PreflightClient/displayedLocations(_:targetParameters:)`` (AEP's way); `true` (the default,
    /// the Target SDK's) counts it at once.
    public var notifyDisplay: Bool
    /// Each ``TargetContent`` gets its ``TargetContent/data``; implied by a request with a
    /// ``TargetRequestObject/contentWithDataCallback``.
    public var withData: Bool
    /// How long the agent waits for Target for this load (above 0, at most 60 s) instead of its
    /// `target.timeout`; what it cuts short answers its default content. nil: the agent's.
    public var timeout: Duration?
    /// The Target property (workspace) of this load, AEP's `at_property`; nil: the client's
    /// ``PreflightClient/Configuration/propertyToken``, else the agent's `target.propertyToken`.
    public var propertyToken: String?

    /// Options; the defaults are a plain load's.
    public init(
        notifyDisplay: Bool = true,
        withData: Bool = false,
        timeout: Duration? = nil,
        propertyToken: String? = nil
    ) {
        self.notifyDisplay = notifyDisplay
        self.withData = withData
        self.timeout = timeout
        self.propertyToken = propertyToken
    }
}

/// The parameters of a click or display report: AEP's `TargetParameters` (its `TargetOrder` and `TargetProduct`
/// are the string dictionaries ``TargetPrefetchObject`` takes).
public struct TargetParameters: Sendable, Hashable {
    /// Mbox parameters.
    public var parameters: [String: String]?
    /// Profile parameters.
    public var profileParameters: [String: String]?
    /// Product parameters: only `id` and `categoryId`.
    public var productParameters: [String: String]?
    /// Order parameters: only `id`, `total` and `purchasedProductIds`.
    public var orderParameters: [String: String]?

    /// Parameters, as AEP's `TargetParameters(parameters:profileParameters:order:product:)`.
    public init(
        parameters: [String: String]? = nil,
        profileParameters: [String: String]? = nil,
        productParameters: [String: String]? = nil,
        orderParameters: [String: String]? = nil
    ) {
        self.parameters = parameters
        self.profileParameters = profileParameters
        self.productParameters = productParameters
        self.orderParameters = orderParameters
    }
}

/// The content a load answered for one request.
public struct TargetContent: Sendable, Hashable {
    /// Where the content came from (the agent's `source`).
    public struct Source: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The prefetch cache: no network.
        public static let cache = Source(rawValue: "cache")
        /// Fetched from Target now (not cached).
        public static let network = Source(rawValue: "network")
        /// The request's default content: Target had none, failed, or could not be reached, or the agent
        /// could not be (then `failure` says why).
        public static let `default` = Source(rawValue: "default")
    }

    /// The mbox name.
    public var name: String
    /// The offer (html as it is, json serialized as JSON, several options concatenated) or the default.
    public var content: String
    /// Where `content` came from.
    public var source: Source
    /// Why the client answered the default itself: the agent could not be reached, refused the request
    /// (`invalid_argument`), or the call was cancelled. nil when the agent answered.
    public var failure: PreflightError?
    /// What Target sent with the offer, when the load asked for it (empty for default content); else nil.
    public var data: TargetContentData?

    /// A content value (tests and app-side fakes make them).
    public init(
        name: String,
        content: String,
        source: Source,
        failure: PreflightError? = nil,
        data: TargetContentData? = nil
    ) {
        self.name = name
        self.content = content
        self.source = source
        self.failure = failure
        self.data = data
    }
}

extension PreflightClient {
    /// Prefetches `prefetchObjects` into the agent's cache, for every app on the box: the Target SDK's
    /// `targetPrefetchContent(_:withProfileParameters:callback:)`. One Target call for the whole array.
    ///
    /// Safe to repeat (a second prefetch of a name replaces its entry), so retried as in ``Configuration``.
    ///
    /// - Parameters:
    ///   - profileParameters: Profile parameters for every mbox.
    ///   - callback: Called once with `true` when Target answered (the mboxes it had content for are cached),
    ///     `false` when it did not, or the agent could not be reached or refused the arguments (the async form
    ///     returns the same). Runs on a task of the global concurrent executor.
    public func targetPrefetchContent(
        _ prefetchObjects: [TargetPrefetchObject],
        profileParameters: [String: String]? = nil,
        callback: (@Sendable (Bool) -> Void)?
    ) {
        Task {
            let failure = await prefetch(prefetchObjects, profileParameters: profileParameters)
            callback?(failure == nil)
        }
    }

    /// Prefetches `prefetchObjects` into the agent's cache and returns whether Target answered (the agent's
    /// `success`). False also when the agent could not be reached or refused the arguments.
    ///
    /// Safe to repeat, so retried as in ``Configuration``.
    @discardableResult
    public func targetPrefetchContent(
        _ prefetchObjects: [TargetPrefetchObject],
        profileParameters: [String: String]? = nil
    ) async -> Bool {
        await prefetch(prefetchObjects, profileParameters: profileParameters) == nil
    }

    /// Prefetches as ``targetPrefetchContent(_:profileParameters:callback:)`` does, waiting for Target at most
    /// `timeout` (above 0, at most 60 s) instead of the agent's `target.timeout`: `false` when it ran out
    /// (nothing cached). Each attempt waits at least that long plus 2 s.
    public func targetPrefetchContent(
        _ prefetchObjects: [TargetPrefetchObject],
        profileParameters: [String: String]?,
        timeout: Duration,
        callback: (@Sendable (Bool) -> Void)?
    ) {
        Task {
            let failure = await prefetch(prefetchObjects, profileParameters: profileParameters, timeout: timeout)
            callback?(failure == nil)
        }
    }

    /// Prefetches with a `timeout` of its own (see ``targetPrefetchContent(_:profileParameters:timeout:callback:)``)
    /// and returns whether Target answered in time.
    @discardableResult
    public func targetPrefetchContent(
        _ prefetchObjects: [TargetPrefetchObject],
        profileParameters: [String: String]?,
        timeout: Duration
    ) async -> Bool {
        await prefetch(prefetchObjects, profileParameters: profileParameters, timeout: timeout) == nil
    }

    /// Loads `requests` (the SDK's `retrieveLocationContent` / `loadRequests`) and calls each request's
    /// callback with its content: from the prefetch cache at once, else from Target in one call for all the
    /// misses, else the request's default content. Returns at once; the callbacks follow.
    ///
    /// Safe to repeat (a load only reads), so retried as in ``Configuration``; when the agent cannot be
    /// reached every callback gets its default content.
    public func targetLoadRequests(_ requests: [TargetRequestObject], profileParameters: [String: String]? = nil) {
        Task {
            await targetLoadRequests(requests, profileParameters: profileParameters)
        }
    }

    /// Loads `requests` and returns their contents in request order, after calling each request's callback
    /// (if it has one).
    ///
    /// Never fails: a request the agent could not answer gets its default content, with
    /// ``TargetContent/failure`` saying why. Safe to repeat, so retried as in ``Configuration``.
    @discardableResult
    public func targetLoadRequests(
        _ requests: [TargetRequestObject],
        profileParameters: [String: String]? = nil
    ) async -> [TargetContent] {
        await targetLoadRequests(requests, profileParameters: profileParameters, options: TargetLoadOptions())
    }

    /// Loads `requests` with `options` (deferred display, data, a timeout of its own; see
    /// ``TargetLoadOptions``), as ``targetLoadRequests(_:profileParameters:)`` does: returns at once, the
    /// callbacks follow.
    public func targetLoadRequests(
        _ requests: [TargetRequestObject],
        profileParameters: [String: String]?,
        options: TargetLoadOptions
    ) {
        Task {
            await targetLoadRequests(requests, profileParameters: profileParameters, options: options)
        }
    }

    /// Loads `requests` with `options` and returns their contents in request order, after calling each request's
    /// `callback` and `contentWithDataCallback`. With data asked for (``TargetLoadOptions/withData``, or a
    /// request with a `contentWithDataCallback`) each content has its ``TargetContent/data``.
    ///
    /// Never fails, as ``targetLoadRequests(_:profileParameters:)``. With a ``TargetLoadOptions/timeout`` each
    /// attempt waits at least that long plus 2 s.
    @discardableResult
    public func targetLoadRequests(
        _ requests: [TargetRequestObject],
        profileParameters: [String: String]?,
        options: TargetLoadOptions
    ) async -> [TargetContent] {
        guard !requests.isEmpty else { return [] }
        var options = options
        options.withData = options.withData || requests.contains { $0.contentWithDataCallback != nil }
        let args = inProperty(
            TargetWire.loadArguments(requests, profileParameters: profileParameters, options: options),
            options.propertyToken
        )
        let contents: [TargetContent]
        switch await send(Command.loadRequests.wireName, args: args, timeout: attemptTimeout(options.timeout)) {
        case .success(let result):
            do {
                contents = try TargetWire.contents(from: result, for: requests, withData: options.withData)
            } catch {
                contents = TargetWire.defaults(for: requests, failure: error, withData: options.withData)
            }
        case .failure(let error):
            contents = TargetWire.defaults(for: requests, failure: error, withData: options.withData)
        }
        for (request, content) in zip(requests, contents) {
            request.callback?(content.content)
            request.contentWithDataCallback?(content.content, content.data ?? TargetContentData())
        }
        return contents
    }

    // MARK: Clicks and displays

    /// Tells Target the user clicked the offer of mbox `name`: AEP's `Target.clickedLocation(_:targetParameters:)`.
    /// The agent queues a click notification with the click metric Target sent with the offer (prefetched or
    /// loaded) and delivers it as display notifications are. Fire-and-forget, as in AEP: returns at once, and
    /// when the agent cannot be reached, or refuses (an mbox neither prefetched nor loaded, or whose activity
    /// has no click goal), nothing is sent and nothing says so; the async form does.
    public func clickedLocation(_ name: String, targetParameters: TargetParameters? = nil) {
        post(
            Command.clickedLocation.wireName,
            args: inProperty(TargetWire.clickArguments(name, targetParameters)),
            timeout: configuration.requestTimeout
        ) { _ in }
    }

    /// Tells Target the user clicked the offer of mbox `name`, once the agent queued the click.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` (field `name`) for an mbox neither prefetched nor
    ///   loaded or without a click metric, (another field) for a parameter the agent refuses; nothing is sent
    ///   then. ``PreflightError/isUnreachable`` when the agent could not be reached.
    public func clickedLocation(
        _ name: String,
        targetParameters: TargetParameters? = nil
    ) async throws(PreflightError) {
        let result = try await send(
            Command.clickedLocation.wireName,
            args: inProperty(TargetWire.clickArguments(name, targetParameters)),
            timeout: configuration.requestTimeout
        )
        .get()
        guard result["queued"] == .bool(true) else { throw .badReply("clickedLocation result without queued") }
    }

    /// Reports the mboxes the app showed, after a load with ``TargetLoadOptions/notifyDisplay`` `false`: AEP's
    /// `Target.displayedLocations(_:targetParameters:)`. Each gets one display notification, with these
    /// parameters when any are given, else those of the load; the agent skips the others (not loaded that way,
    /// or counted already), so nothing is counted twice. Fire-and-forget, as in AEP.
    public func displayedLocations(_ names: [String], targetParameters: TargetParameters? = nil) {
        post(
            Command.displayedLocations.wireName,
            args: inProperty(TargetWire.displayArguments(names, targetParameters)),
            timeout: configuration.requestTimeout
        ) { _ in }
    }

    /// Reports the mboxes the app showed and returns those that got a display notification (the agent's
    /// `notified`); the others were skipped.
    ///
    /// - Throws: ``PreflightError``: code `invalid_argument` for an argument the agent refuses;
    ///   ``PreflightError/isUnreachable`` when the agent could not be reached (nothing sent).
    @discardableResult
    public func displayedLocations(
        _ names: [String],
        targetParameters: TargetParameters? = nil
    ) async throws(PreflightError) -> [String] {
        let result = try await send(
            Command.displayedLocations.wireName,
            args: inProperty(TargetWire.displayArguments(names, targetParameters)),
            timeout: configuration.requestTimeout
        )
        .get()
        return try TargetWire.notified(from: result)
    }

    /// A Target command's `args` with the `propertyToken` of this call, else of the client, when there is one.
    private func inProperty(_ args: JSONObject, _ propertyToken: String? = nil) -> JSONObject {
        guard let token = propertyToken ?? configuration.propertyToken else { return args }
        var args = args
        args["propertyToken"] = .string(token)
        return args
    }

    /// How long an attempt waits for a command with a `timeout` of its own: that plus 2 s when longer than
    /// ``Configuration/requestTimeout``.
    private func attemptTimeout(_ timeout: Duration?) -> Duration {
        guard let timeout else { return configuration.requestTimeout }
        return max(configuration.requestTimeout, timeout + .seconds(2))
    }

    /// Empties the agent's prefetch cache (for every app on the box): the SDK's `clearPrefetchCache`.
    /// Returns at once.
    ///
    /// Safe to repeat (clearing an empty cache clears nothing), so retried as in ``Configuration``.
    public func targetPrefetchClearCache() {
        Task {
            _ = try? await targetPrefetchClearCache()
        }
    }

    /// Empties the agent's prefetch cache and returns how many entries it removed.
    ///
    /// - Throws: ``PreflightError`` when the agent could not be reached.
    @discardableResult
    public func targetPrefetchClearCache() async throws(PreflightError) -> Int {
        let result = try await send(
            Command.clearPrefetchCache.wireName,
            args: nil,
            timeout: configuration.requestTimeout
        )
        .get()
        guard let cleared = result["cleared"]?.doubleValue else {
            throw .badReply("clearPrefetchCache result without cleared")
        }
        return Int(cleared)
    }

    /// Sends a prefetch; nil when Target answered, else why not.
    private func prefetch(
        _ prefetchObjects: [TargetPrefetchObject],
        profileParameters: [String: String]?,
        timeout: Duration? = nil
    ) async -> PreflightError? {
        var args = inProperty(TargetWire.prefetchArguments(prefetchObjects, profileParameters: profileParameters))
        args["timeout"] = timeout.map(TargetWire.seconds)
        switch await send(Command.prefetch.wireName, args: args, timeout: attemptTimeout(timeout)) {
        case .success(let result):
            return TargetWire.prefetchFailure(result)
        case .failure(let error):
            return error
        }
    }
}

/// The JSON of the Target commands (docs/PROTOCOL.md), kept apart from the calls so that it is tested alone.
enum TargetWire {
    /// `prefetch` args: `{"mboxes":[{"name",...}],"profileParameters":{...}}`; empty parameter objects left out,
    /// parameters in name order (a dictionary has none of its own).
    static func prefetchArguments(
        _ objects: [TargetPrefetchObject],
        profileParameters: [String: String]?
    ) -> JSONObject {
        var args: JSONObject = [
            "mboxes": .array(
                objects.map { object in
                    mbox(
                        name: object.name,
                        extra: [],
                        mboxParameters: object.mboxParameters,
                        productParameters: object.productParameters,
                        orderParameters: object.orderParameters
                    )
                }
            )
        ]
        args["profileParameters"] = parameters(profileParameters)
        return args
    }

    /// `loadRequests` args: `{"requests":[{"name","defaultContent",...}],"profileParameters":{...}}`, then
    /// `"notifyDisplay":false`, `"withData":true` and `"timeout"` (seconds) when the options differ from a plain
    /// load's.
    static func loadArguments(
        _ requests: [TargetRequestObject],
        profileParameters: [String: String]?,
        options: TargetLoadOptions = TargetLoadOptions()
    ) -> JSONObject {
        var args: JSONObject = [
            "requests": .array(
                requests.map { request in
                    mbox(
                        name: request.name,
                        extra: [(key: "defaultContent", value: .string(request.defaultContent))],
                        mboxParameters: request.mboxParameters,
                        productParameters: request.productParameters,
                        orderParameters: request.orderParameters
                    )
                }
            )
        ]
        args["profileParameters"] = parameters(profileParameters)
        if !options.notifyDisplay { args["notifyDisplay"] = .bool(false) }
        if options.withData { args["withData"] = .bool(true) }
        args["timeout"] = options.timeout.map(seconds)
        return args
    }

    /// A duration in seconds, as the `timeout` arguments take it (`0.5`, `30`).
    static func seconds(_ duration: Duration) -> JSONValue {
        let (whole, attoseconds) = duration.components
        guard attoseconds != 0 else { return .integer(whole) }
        return .number(Double(whole) + Double(attoseconds) / 1e18)
    }

    /// `clickedLocation` args: `{"name":"promo","mboxParameters":{...},"profileParameters":{...},...}`.
    static func clickArguments(_ name: String, _ targetParameters: TargetParameters?) -> JSONObject {
        var args: JSONObject = ["name": .string(name)]
        add(targetParameters, to: &args)
        return args
    }

    /// `displayedLocations` args: `{"names":["logo"],"mboxParameters":{...},...}`.
    static func displayArguments(_ names: [String], _ targetParameters: TargetParameters?) -> JSONObject {
        var args: JSONObject = ["names": .array(names.map(JSONValue.string))]
        add(targetParameters, to: &args)
        return args
    }

    /// A `displayedLocations` result: its `notified` names.
    static func notified(from result: JSONValue) throws(PreflightError) -> [String] {
        guard let notified = result["notified"]?.arrayValue else {
            throw .badReply("displayedLocations result without notified")
        }
        return notified.compactMap(\.stringValue)
    }

    private static func add(_ targetParameters: TargetParameters?, to args: inout JSONObject) {
        guard let targetParameters else { return }
        args["mboxParameters"] = parameters(targetParameters.parameters)
        args["profileParameters"] = parameters(targetParameters.profileParameters)
        args["productParameters"] = parameters(targetParameters.productParameters)
        args["orderParameters"] = parameters(targetParameters.orderParameters)
    }

    /// An entry's `data`: each of its objects as string to string (a value that is not a string as its JSON).
    static func data(from entry: JSONValue) -> TargetContentData {
        func strings(_ key: String) -> [String: String]? {
            guard let object = entry["data"]?[key]?.objectValue else { return nil }
            var strings: [String: String] = [:]
            for (name, value) in object {
                strings[name] = value.stringValue ?? JSONWriter.string(value)
            }
            return strings
        }
        return TargetContentData(
            responseTokens: strings("responseTokens"),
            analyticsPayload: strings("analyticsPayload"),
            clickMetricAnalyticsPayload: strings("clickMetricAnalyticsPayload")
        )
    }

    /// What is wrong with a `prefetch` result: nil when the agent says Target answered.
    static func prefetchFailure(_ result: JSONValue) -> PreflightError? {
        switch result["success"] {
        case .bool(true)?:
            return nil
        case .bool(false)?:
            return PreflightError(
                code: .prefetchFailed,
                message: "Target did not answer the prefetch (see preflightctl status); nothing was cached"
            )
        default:
            return .badReply("prefetch result without success")
        }
    }

    /// A `loadRequests` result, matched to the requests by position.
    static func contents(
        from result: JSONValue,
        for requests: [TargetRequestObject],
        withData: Bool = false
    ) throws(PreflightError) -> [TargetContent] {
        guard let entries = result["contents"]?.arrayValue else {
            throw .badReply("loadRequests result without contents")
        }
        guard entries.count == requests.count else {
            throw .badReply("loadRequests answered \(entries.count) contents for \(requests.count) requests")
        }
        var contents: [TargetContent] = []
        contents.reserveCapacity(requests.count)
        for (request, entry) in zip(requests, entries) {
            guard let content = entry["content"]?.stringValue, let source = entry["source"]?.stringValue else {
                throw .badReply("a loadRequests content without content or source")
            }
            contents.append(
                TargetContent(
                    name: entry["name"]?.stringValue ?? request.name,
                    content: content,
                    source: TargetContent.Source(rawValue: source),
                    data: withData ? data(from: entry) : nil
                )
            )
        }
        return contents
    }

    /// Every request's default content, because of `failure`.
    static func defaults(
        for requests: [TargetRequestObject],
        failure: PreflightError,
        withData: Bool = false
    ) -> [TargetContent] {
        requests.map {
            TargetContent(
                name: $0.name,
                content: $0.defaultContent,
                source: .default,
                failure: failure,
                data: withData ? TargetContentData() : nil
            )
        }
    }

    private static func mbox(
        name: String,
        extra: [(key: String, value: JSONValue)],
        mboxParameters: [String: String]?,
        productParameters: [String: String]?,
        orderParameters: [String: String]?
    ) -> JSONValue {
        var object = JSONObject([(key: "name", value: .string(name))] + extra)
        object["mboxParameters"] = parameters(mboxParameters)
        object["productParameters"] = parameters(productParameters)
        object["orderParameters"] = parameters(orderParameters)
        return .object(object)
    }

    /// A parameter dictionary as a JSON object in name order, or nil (left out) when empty.
    private static func parameters(_ dictionary: [String: String]?) -> JSONValue? {
        guard let dictionary, !dictionary.isEmpty else { return nil }
        return .object(
            JSONObject(dictionary.sorted { $0.key < $1.key }.map { (key: $0.key, value: .string($0.value)) })
        )
    }
}
