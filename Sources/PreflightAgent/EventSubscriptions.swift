import PreflightProtocol
import Synchronization

/// Which event topics some subscriber receives, as the events socket (an XPUB) reports its subscribers'
/// subscriptions: written by the I/O thread as they come and go, read by any thread before it builds an
/// event (`EventPublisher`), so that an event nobody receives is neither built nor sent.
///
/// A subscription that reached libzmq but not yet the I/O thread is not known here for a few microseconds:
/// an event published meanwhile is not sent, as PUB drops one published before a subscription arrives.
public final class EventSubscriptions: Sendable {
    private let topics = Atomic<UInt64>(0)

    public init() {}

    /// Whether some subscriber receives `topic`.
    public func wants(_ topic: EventTopic) -> Bool {
        topics.load(ordering: .relaxed) & topic.bit != 0
    }

    /// The prefixes subscribed to, on the I/O thread.
    struct Prefixes {
        private var active: Set<[UInt8]> = []

        /// Applies one message received on the XPUB socket (`1` or `0`, then the prefix). Returns the topics
        /// subscribed to now, or nil when the message is not a subscription or changes nothing.
        mutating func apply(_ message: [UInt8]) -> UInt64? {
            guard let kind = message.first, kind <= 1 else { return nil }
            let prefix = Array(message.dropFirst())
            let changed = kind == 1 ? active.insert(prefix).inserted : active.remove(prefix) != nil
            guard changed else { return nil }
            return active.reduce(0) { $0 | EventTopic.bits(matching: $1) }
        }
    }

    func store(_ set: UInt64) {
        topics.store(set, ordering: .relaxed)
    }
}
