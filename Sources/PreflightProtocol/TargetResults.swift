/// The result of `prefetch` (PROTOCOL.md): whether Target answered, and per requested mbox (in request
/// order) whether the agent now holds an offer for it. The domain returns this value; its JSON is
/// written here, at the protocol edge.
public struct PrefetchResult: Sendable, Hashable {
    public struct Mbox: Sendable, Hashable {
        public var name: String
        public var cached: Bool

        public init(name: String, cached: Bool) {
            self.name = name
            self.cached = cached
        }
    }

    public var success: Bool
    public var mboxes: [Mbox]

    public init(success: Bool, mboxes: [Mbox]) {
        self.success = success
        self.mboxes = mboxes
    }

    /// `{"success":…,"mboxes":[{"name":…,"cached":…},…]}`
    public var json: JSONValue {
        [
            "success": .bool(success),
            "mboxes": .array(mboxes.map { ["name": .string($0.name), "cached": .bool($0.cached)] }),
        ]
    }
}
