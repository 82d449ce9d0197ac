import PreflightProtocol
import Synchronization
import Testing

@testable import PreflightAgent

@Suite struct EventSubscriptionsTests {
    @Test func aPrefixReceivesTheTopicsItStarts() {
        let all = EventTopic.allCases.reduce(UInt64(0)) { $0 | $1.bit }
        #expect(EventTopic.allCases.count <= 64)
        #expect(all.nonzeroBitCount == EventTopic.allCases.count)
        #expect(EventTopic.bits(matching: []) == all)
        let auth = EventTopic.allCases.filter { $0.topic.hasPrefix("auth.") }
        #expect(auth.count == 6)
        #expect(EventTopic.bits(matching: Array("auth.".utf8)) == auth.reduce(0) { $0 | $1.bit })
        #expect(EventTopic.bits(matching: Array("auth.decisions".utf8)) == EventTopic.authDecisions.bit)
        #expect(EventTopic.bits(matching: Array("auth.decisions.more".utf8)) == 0)
        #expect(EventTopic.bits(matching: Array("x".utf8)) == 0)
    }

    @Test func subscriptionsComeAndGo() {
        var prefixes = EventSubscriptions.Prefixes()
        let subscribe = { (prefix: String) in [1] + Array(prefix.utf8) }
        let unsubscribe = { (prefix: String) in [0] + Array(prefix.utf8) }
        #expect(prefixes.apply(subscribe("offers.")) == EventTopic.bits(matching: Array("offers.".utf8)))
        // The same prefix again, or one nobody subscribed to going, changes nothing.
        #expect(prefixes.apply(subscribe("offers.")) == nil)
        #expect(prefixes.apply(unsubscribe("auth.")) == nil)
        let both = EventTopic.bits(matching: Array("offers.".utf8)) | EventTopic.authDecisions.bit
        #expect(prefixes.apply(subscribe("auth.decisions")) == both)
        #expect(prefixes.apply(unsubscribe("offers.")) == EventTopic.authDecisions.bit)
        #expect(prefixes.apply(subscribe("")) == EventTopic.bits(matching: []))
        #expect(prefixes.apply(unsubscribe("")) == EventTopic.authDecisions.bit)
        #expect(prefixes.apply(unsubscribe("auth.decisions")) == 0)
        // Not a subscription: an empty message, or one starting with another byte.
        #expect(prefixes.apply([]) == nil)
        #expect(prefixes.apply([2] + Array("auth.".utf8)) == nil)
    }

    @Test func anEventNobodyReceivesIsNotBuilt() {
        let subscriptions = EventSubscriptions()
        let sent = Mutex<[EventTopic]>([])
        let publisher = EventPublisher(
            wants: { subscriptions.wants($0) },
            send: { topic, _ in sent.withLock { $0.append(topic) } }
        )
        let built = Mutex(0)
        let body: () -> JSONObject = {
            built.withLock { $0 += 1 }
            return ["n": 1]
        }
        publisher(.authDecisions, body())
        #expect(built.withLock { $0 } == 0)
        subscriptions.store(EventTopic.authDecisions.bit)
        publisher(.offersCleared, body())
        publisher(.authDecisions, body())
        #expect(built.withLock { $0 } == 1)
        #expect(sent.withLock { $0 } == [.authDecisions])
    }
}
