import PreflightProtocol
import Synchronization

/// Browsers and addresses already read: a box sends the same few user agents and pages again and
/// again, and reading them is a third of a one-mbox decision. Bounded; emptied when full.
final class ContextCache: Sendable {
    static let limit = 64

    private let users = Mutex<[String: JSONValue]>([:])
    private let pages = Mutex<[String: JSONValue]>([:])

    /// The `user` context for a user agent and client hints (`key` names both).
    func user(key: String, make: () -> JSONValue) -> JSONValue {
        ContextCache.value(users, key, make)
    }

    /// The `page` or `referring` context of an address.
    func page(url: String) -> JSONValue {
        ContextCache.value(pages, url) { PageAddress(url: url).json }
    }

    private static func value(
        _ store: borrowing Mutex<[String: JSONValue]>,
        _ key: String,
        _ make: () -> JSONValue
    ) -> JSONValue {
        if let known = store.withLock({ $0[key] }) { return known }
        let value = make()
        store.withLock { entries in
            if entries.count >= limit { entries.removeAll(keepingCapacity: true) }
            entries[key] = value
        }
        return value
    }
}
