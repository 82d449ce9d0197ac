import PreflightProtocol

/// A display notification: Target learns that a prefetched mbox was shown.
///
/// Held as the encoded JSON of its Delivery API `notifications` item: it is written to the journal and
/// later into a Delivery request as those bytes, never rebuilt as a tree.
public struct DisplayNotification: Sendable, Hashable {
    public var id: String
    public var timestampMs: Int64
    public var mboxName: String
    /// The Delivery API `notifications` item, encoded:
    /// `{id, type: "display", timestamp, mbox: {name, state}, tokens, parameters, profileParameters, product, order}`.
    public var encoded: [UInt8]

    /// Built on a cache hit from the offer's prepared fragment: no JSON tree, one buffer.
    public static func display(
        of offer: CachedOffer,
        targeting: MboxTargeting,
        profileParameters: [Parameter],
        timestampMs: Int64
    ) -> DisplayNotification {
        let id = RandomUUID.make()
        var writer = JSONWriter(reservingCapacity: 96 + offer.notificationFragment.count)
        writer.appendASCII("{\"id\":\"")
        writer.appendASCII(id)  // hex digits and dashes: nothing to escape
        writer.appendASCII("\",\"type\":\"display\",\"timestamp\":")
        writer.writeInteger(timestampMs)
        writer.appendASCII(",")
        writer.writeRaw(offer.notificationFragment)
        let targetingMembers = DeliveryCodec.targetingJSON(targeting, profileParameters: profileParameters)
        for member in targetingMembers {
            writer.appendASCII(",")
            writer.writeString(member.key)
            writer.appendASCII(":")
            writer.write(member.value)
        }
        writer.appendASCII("}")
        return DisplayNotification(id: id, timestampMs: timestampMs, mboxName: offer.name, encoded: writer.bytes)
    }

    public init(id: String, timestampMs: Int64, mboxName: String, encoded: [UInt8]) {
        self.id = id
        self.timestampMs = timestampMs
        self.mboxName = mboxName
        self.encoded = encoded
    }

    /// From a journal entry.
    init?(deliveryJSON: JSONValue) {
        guard let id = deliveryJSON["id"]?.stringValue, let timestamp = deliveryJSON["timestamp"]?.doubleValue else {
            return nil
        }
        self.id = id
        self.timestampMs = Int64(timestamp)
        self.mboxName = deliveryJSON["mbox"]?["name"]?.stringValue ?? ""
        self.encoded = JSONWriter.encode(deliveryJSON)
    }
}
