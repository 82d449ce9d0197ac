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

    /// A content value (tests and app-side fakes make them).
    public init(name: String, content: String, source: Source, failure: PreflightError? = nil) {
        self.name = name
        self.content = content
        self.source = source
        self.failure = failure
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
        guard !requests.isEmpty else { return [] }
        let args = TargetWire.loadArguments(requests, profileParameters: profileParameters)
        let contents: [TargetContent]
        switch await send(Command.loadRequests.wireName, args: args, timeout: configuration.requestTimeout) {
        case .success(let result):
            do {
                contents = try TargetWire.contents(from: result, for: requests)
            } catch {
                contents = TargetWire.defaults(for: requests, failure: error)
            }
        case .failure(let error):
            contents = TargetWire.defaults(for: requests, failure: error)
        }
        for (request, content) in zip(requests, contents) {
            request.callback?(content.content)
        }
        return contents
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
        profileParameters: [String: String]?
    ) async -> PreflightError? {
        let args = TargetWire.prefetchArguments(prefetchObjects, profileParameters: profileParameters)
        switch await send(Command.prefetch.wireName, args: args, timeout: configuration.requestTimeout) {
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

    /// `loadRequests` args: `{"requests":[{"name","defaultContent",...}],"profileParameters":{...}}`.
    static func loadArguments(_ requests: [TargetRequestObject], profileParameters: [String: String]?) -> JSONObject {
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
        return args
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
        for requests: [TargetRequestObject]
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
                    source: TargetContent.Source(rawValue: source)
                )
            )
        }
        return contents
    }

    /// Every request's default content, because of `failure`.
    static func defaults(for requests: [TargetRequestObject], failure: PreflightError) -> [TargetContent] {
        requests.map {
            TargetContent(name: $0.name, content: $0.defaultContent, source: .default, failure: failure)
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
