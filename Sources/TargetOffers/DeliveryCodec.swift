import PreflightCore
import PreflightProtocol
import UpstreamHTTP

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// One mbox in a Delivery request's `prefetch.mboxes` or `execute.mboxes`.
public struct DeliveryMbox: Sendable, Hashable {
    public var name: String
    public var targeting: MboxTargeting

    public init(name: String, targeting: MboxTargeting) {
        self.name = name
        self.targeting = targeting
    }
}

/// Builds Delivery API requests (`POST /rest/v1/delivery`) and reads their responses, per the
/// Target Delivery API's OpenAPI description.
public struct DeliveryCodec: Sendable {
    public var configuration: TargetConfiguration

    public init(configuration: TargetConfiguration) {
        self.configuration = configuration
    }

    /// The request for a set of prefetches, executes and notifications, made with `visitor`'s identity, under
    /// `property` (nil: the configured `target.propertyToken`); with `qaModeToken`, in Target's QA mode
    /// (`qaMode.token`, a preview); with `trace`, traced (`trace.authorizationToken`).
    public func request(
        prefetch: [DeliveryMbox] = [],
        execute: [DeliveryMbox] = [],
        profileParameters: [Parameter] = [],
        notifications: [QueuedNotification] = [],
        property: String? = nil,
        visitor: VisitorSession.Snapshot,
        timeOffsetInMinutes: Int,
        qaModeToken: String? = nil,
        trace: TargetTrace? = nil
    ) -> HTTPRequest {
        var body = requestBody(
            prefetch: prefetch,
            execute: execute,
            profileParameters: profileParameters,
            property: property,
            visitor: visitor,
            timeOffsetInMinutes: timeOffsetInMinutes
        )
        if let qaModeToken { body["qaMode"] = ["token": .string(qaModeToken)] }
        if let trace { body["trace"] = ["authorizationToken": .string(trace.authorizationToken)] }
        return HTTPRequest(
            method: "POST",
            url: url(visitor: visitor),
            headers: headers,
            body: Self.encode(body, notifications: notifications),
            timeout: configuration.timeout
        )
    }

    private var headers: [(name: String, value: String)] {
        [
            (name: "Content-Type", value: "application/json"),
            (name: "Accept", value: "application/json"),
            (name: "User-Agent", value: configuration.device.userAgent),
            (name: "X-EXC-SDK", value: "Preflight"),
            (name: "X-EXC-SDK-Version", value: preflightVersion),
        ]
    }

    /// What every request that carries notifications alone (no work, no QA mode, no trace) has in common while
    /// the configuration, the visitor's identity, the property and the time zone stay: its URL, its headers and
    /// its body up to the notifications. The sender makes one such request per batch; made from the template,
    /// it costs a copy and a new `requestId` instead of a JSON tree and a URL built again (about 36,000
    /// instructions per call, docs/BENCHMARKS.md). `request(...)` and this are one shape: the template's body
    /// is `requestBody` written out.
    struct NotificationsTemplate: Sendable {
        /// What the template was made from: a request whose `Key` differs needs a new one.
        struct Key: Sendable, Equatable {
            var configuration: TargetConfiguration
            /// The visitor's identity, its session's age left out (no part of a request).
            var visitor: VisitorSession.Snapshot
            var property: String?
            var timeOffsetInMinutes: Int

            init(
                configuration: TargetConfiguration,
                visitor: VisitorSession.Snapshot,
                property: String?,
                timeOffsetInMinutes: Int
            ) {
                self.configuration = configuration
                self.visitor = visitor
                self.visitor.sessionAge = .zero
                self.property = property
                self.timeOffsetInMinutes = timeOffsetInMinutes
            }
        }

        let key: Key
        let url: String
        let headers: [(name: String, value: String)]
        let timeout: Duration
        /// The body written out, without its closing brace; its `requestId` (the first member) a placeholder.
        let head: [UInt8]
        /// Where the placeholder `requestId`'s 36 characters begin in `head`.
        static let requestIDOffset = #"{"requestId":""#.utf8.count

        init(_ key: Key) {
            let codec = DeliveryCodec(configuration: key.configuration)
            let body = codec.requestBody(
                property: key.property,
                visitor: key.visitor,
                timeOffsetInMinutes: key.timeOffsetInMinutes
            )
            precondition(body.members.first?.key == "requestId", "a Delivery body begins with its requestId")
            var writer = JSONWriter(reservingCapacity: 512)
            writer.write(.object(body))
            writer.bytes.removeLast()
            self.key = key
            self.url = codec.url(visitor: key.visitor)
            self.headers = codec.headers
            self.timeout = key.configuration.timeout
            self.head = writer.bytes
        }

        /// The request for `notifications` (at least one), with a new `requestId`.
        func request(notifications: [QueuedNotification]) -> HTTPRequest {
            // Written in one pass into a buffer of the exact size: appended piece by piece, each of the batch's
            // items paid an append's checks (about 110 instructions per display notification on the sender).
            let capacity = head.count + DeliveryCodec.notificationBytes(notifications)
            let bytes = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, count in
                var body = ByteCursor(buffer.baseAddress!)
                body.put(head)
                RandomUUID.write(to: buffer.baseAddress! + Self.requestIDOffset)
                DeliveryCodec.write(notifications, to: &body)
                count = body.count
            }
            return HTTPRequest(method: "POST", url: url, headers: headers, body: bytes, timeout: timeout)
        }
    }

    /// The request body without notifications, QA mode or trace: what Target decides, and what the on-device
    /// engine decides the same way.
    func requestBody(
        prefetch: [DeliveryMbox] = [],
        execute: [DeliveryMbox] = [],
        profileParameters: [Parameter] = [],
        property: String? = nil,
        visitor: VisitorSession.Snapshot,
        timeOffsetInMinutes: Int
    ) -> JSONObject {
        var body: JSONObject = ["requestId": .string(RandomUUID.make())]
        body["context"] = .object(context(timeOffsetInMinutes: timeOffsetInMinutes))
        var id = JSONObject()
        if let tntId = visitor.tntId { id["tntId"] = .string(tntId) }
        if let thirdPartyId = visitor.thirdPartyId { id["thirdPartyId"] = .string(thirdPartyId) }
        if let marketingCloudVisitorId = visitor.marketingCloudVisitorId {
            id["marketingCloudVisitorId"] = .string(marketingCloudVisitorId)
            if !visitor.customerIds.isEmpty { id["customerIds"] = .array(visitor.customerIds.map(\.json)) }
        }
        if !id.isEmpty { body["id"] = .object(id) }
        if configuration.environmentId != 0 {
            body["environmentId"] = .integer(configuration.environmentId)
        }
        if let logging = configuration.analyticsLogging {
            body["experienceCloud"] = ["analytics": ["logging": .string(logging)]]
        }
        let propertyToken = property ?? configuration.propertyToken
        if !propertyToken.isEmpty {
            body["property"] = ["token": .string(propertyToken)]
        }
        if !prefetch.isEmpty {
            body["prefetch"] = ["mboxes": .array(mboxes(prefetch, profileParameters: profileParameters))]
        }
        if !execute.isEmpty {
            body["execute"] = ["mboxes": .array(mboxes(execute, profileParameters: profileParameters))]
        }
        return body
    }

    /// The body, with the notifications' prepared bytes spliced in as the last member.
    static func encode(_ body: JSONObject, notifications: [QueuedNotification]) -> [UInt8] {
        var writer = JSONWriter(reservingCapacity: 512 + notificationBytes(notifications))
        writer.write(.object(body))
        guard !notifications.isEmpty else { return writer.bytes }
        // `body` always has members (requestId, context), so the closing brace becomes a comma.
        writer.bytes.removeLast()
        append(notifications, to: &writer.bytes)
        return writer.bytes
    }

    /// `write` into the end of `bytes`.
    static func append(_ notifications: [QueuedNotification], to bytes: inout [UInt8]) {
        let start = bytes.count
        let room = notificationBytes(notifications)
        bytes.append(contentsOf: repeatElement(0, count: room))
        let written = bytes.withUnsafeMutableBufferPointer { buffer in
            var cursor = ByteCursor(buffer.baseAddress! + start)
            write(notifications, to: &cursor)
            return cursor.count
        }
        bytes.removeLast(room - written)
    }

    /// The bytes `write` adds, at most.
    static func notificationBytes(_ notifications: [QueuedNotification]) -> Int {
        notifications.reduce(#","notifications":[]}"#.utf8.count) { total, item in
            total + item.maxEncodedCount + 1
        }
    }

    /// `,"notifications":[…]}` after a body's last member: the notifications' prepared bytes, and the body's
    /// closing brace. `body` has room for `notificationBytes(notifications)` more.
    static func write(_ notifications: [QueuedNotification], to body: inout ByteCursor) {
        body.put(#","notifications":["#)
        var digits = RepeatedDigits()
        for index in notifications.indices {
            if index > 0 { body.put(UInt8(ascii: ",")) }
            notifications[index].writeEncoded(to: &body, digits: &digits)
        }
        body.put(UInt8(ascii: "]"))
        body.put(UInt8(ascii: "}"))
    }

    /// `{serverURL or edge host}/rest/v1/delivery?client=…&sessionId=…`.
    func url(visitor: VisitorSession.Snapshot) -> String {
        var base = configuration.serverURL
        if let edgeHost = visitor.edgeHost, let replaced = Self.replacingHost(of: base, with: edgeHost) {
            base = replaced
        }
        return "\(base)/rest/v1/delivery?client=\(PercentEncoding.encode(configuration.clientCode))"
            + "&sessionId=\(PercentEncoding.encode(visitor.sessionId))"
    }

    /// The URL with its host replaced, keeping scheme and port.
    static func replacingHost(of url: String, with host: String) -> String? {
        guard var components = URLComponents(string: url) else { return nil }
        components.host = host
        return components.string
    }

    private func context(timeOffsetInMinutes: Int) -> JSONObject {
        let device = configuration.device
        var context: JSONObject = [
            "channel": "mobile",
            "application": [
                "id": .string(device.applicationId),
                "name": .string(device.applicationName),
                "version": .string(device.applicationVersion),
            ],
            "screen": [
                "width": .integer(Int64(device.screenWidth)),
                "height": .integer(Int64(device.screenHeight)),
                "orientation": "landscape",
            ],
            "userAgent": .string(device.userAgent),
            "timeOffsetInMinutes": .integer(Int64(timeOffsetInMinutes)),
        ]
        context["mobilePlatform"] = [
            "platformType": .string(device.platformType), "deviceType": "tablet",
            "deviceName": .string(device.deviceName),
        ]
        return context
    }

    private func mboxes(_ mboxes: [DeliveryMbox], profileParameters: [Parameter]) -> [JSONValue] {
        mboxes.enumerated().map { index, mbox in
            var object: JSONObject = ["index": .integer(Int64(index)), "name": .string(mbox.name)]
            object.merge(Self.targetingJSON(mbox.targeting, profileParameters: profileParameters))
            return .object(object)
        }
    }

    /// `parameters`, `profileParameters`, `product` and `order` as the Delivery API spells them.
    static func targetingJSON(_ targeting: MboxTargeting, profileParameters: [Parameter]) -> JSONObject {
        var object = JSONObject()
        if !targeting.mboxParameters.isEmpty {
            object["parameters"] = .object(parametersJSON(targeting.mboxParameters))
        }
        if !profileParameters.isEmpty {
            object["profileParameters"] = .object(parametersJSON(profileParameters))
        }
        if let product = targeting.product, product.id != nil || product.categoryId != nil {
            var json = JSONObject()
            if let id = product.id { json["id"] = .string(id) }
            if let category = product.categoryId { json["categoryId"] = .string(category) }
            object["product"] = .object(json)
        }
        if let order = targeting.order, order.id != nil || order.total != nil || order.purchasedProductIds != nil {
            var json = JSONObject()
            if let id = order.id { json["id"] = .string(id) }
            if let total = order.total { json["total"] = .number(total) }
            if let ids = order.purchasedProductIds { json["purchasedProductIds"] = .array(ids.map { .string($0) }) }
            object["order"] = .object(json)
        }
        return object
    }

    static func parametersJSON(_ parameters: [Parameter]) -> JSONObject {
        JSONObject(parameters.map { (key: $0.name, value: JSONValue.string($0.value)) })
    }
}

/// A Delivery API response, read leniently: unknown fields are ignored.
public struct DeliveryResponse: Sendable {
    public struct Mbox: Sendable {
        public var name: String
        public var state: String?
        public var options: [OfferOption]
        /// The event token of the mbox's click metric (`metrics`, type `click`), for `clickedLocation`.
        public var clickToken: String?
        /// What AEP's `contentWithDataCallback` gives: `responseTokens` (of the first option that has them),
        /// `analyticsPayload` and `clickMetricAnalyticsPayload`, each present only when Target sent it.
        public var data: JSONObject?
        /// The mbox's `trace` (a TraceResponse) as Target sent it, for a traced request.
        public var trace: JSONValue?
    }

    public var tntId: String?
    public var edgeHost: String?
    public var prefetched: [Mbox]
    public var executed: [Mbox]
    /// The ids of the notifications Target confirmed, in its order.
    public var acknowledgedNotificationIds: AcknowledgedIDs
    /// The `QAPreview.generation` the request was sent under: its offers are the preview's of that one.
    public var previewGeneration = 0
}

/// Why a Delivery call gave no usable answer; names the reason counted under "defaults by reason".
public enum DeliveryFailure: Error, Sendable, Hashable {
    case timeout
    case network(String)
    case status(Int, String?)
    /// A 200 whose body carries `message` (Target's error shape).
    case message(String)
    case unparseable(String)
    /// Not sent: Target is down (calls in a row got no answer) and the agent probes it in the background.
    case upstreamDown(String)
    /// Not sent: the box's privacy status (`target.privacy`) is not `optedIn`.
    case notOptedIn(TargetPrivacy)

    /// Target refused the request as invalid (400): retrying the same request cannot succeed. Only
    /// notifications can make the agent's own requests invalid (a bad token, a timestamp Target does not
    /// accept); every other failure is transient or not theirs, and is retried.
    public var isRefusal: Bool {
        if case .status(400, _) = self { return true }
        return false
    }

    /// Target refused the request's QA mode token (`400`, `Invalid QA mode token`): the preview link's
    /// token is unknown to the account, or no longer valid. Known by Target's message, the only thing that
    /// tells it from a request refused for an invalid notification.
    public var refusesQAModeToken: Bool {
        guard case .status(400, let message?) = self else { return false }
        let lowered = message.lowercased()
        return lowered.contains("qa mode") || lowered.contains("qamode")
    }

    /// The server was not reached or did not answer in time (connection refused or reset, name
    /// resolution, timeout): the host may be gone, unlike an answer with an error status.
    public var isNetwork: Bool {
        switch self {
        case .timeout, .network: true
        case .status, .message, .unparseable, .upstreamDown, .notOptedIn: false
        }
    }

    /// The reason code used in counters, events and logs.
    public var reason: String {
        switch self {
        case .timeout: "timeout"
        case .network: "network"
        case .status: "status"
        case .message: "message"
        case .unparseable: "unparseable"
        case .upstreamDown: "upstreamDown"
        case .notOptedIn: "privacy"
        }
    }

    public var detail: String {
        switch self {
        case .timeout: "no answer within the configured timeout"
        case .network(let detail): detail
        case .status(let status, let message): "HTTP \(status)" + (message.map { ": \($0)" } ?? "")
        case .message(let message): message
        case .unparseable(let detail): detail
        case .upstreamDown(let detail): detail
        case .notOptedIn(let status): "not sent: the box's Target privacy status is \(status.rawValue)"
        }
    }
}

extension DeliveryResponse {
    /// Reads an HTTP response; anything but a 200 with a readable body is a `DeliveryFailure`. `sent` is the
    /// notifications the request carried: an answer confirming them as sent is matched against them in place.
    public static func decode(
        _ response: HTTPResponse,
        sent: [QueuedNotification] = []
    ) throws(DeliveryFailure) -> DeliveryResponse {
        // The answer to a batch of notifications, in one pass (the general reader below says the same).
        if response.status == 200,
            let answer = NotificationAnswer.read(
                response.body,
                sent: sent.isEmpty ? nil : (sent.count, { index, bytes in sent[index].idLength(at: bytes) })
            )
        {
            return DeliveryResponse(
                tntId: answer.tntId,
                edgeHost: answer.edgeHost,
                prefetched: [],
                executed: [],
                acknowledgedNotificationIds: answer.acknowledged
            )
        }
        let json = try? JSONReader.read(response.body)
        guard response.status == 200 else {
            throw .status(response.status, json?["message"]?.stringValue)
        }
        guard case .object(let body)? = json else {
            throw .unparseable("the Delivery API answered 200 with a body that is not a JSON object")
        }
        if let message = body["message"]?.stringValue {
            throw .message(message)
        }
        return reading(body)
    }

    /// A Delivery response body already read: Target's, or the one the on-device engine produces.
    static func reading(_ body: JSONObject) -> DeliveryResponse {
        DeliveryResponse(
            tntId: body["id"]?["tntId"]?.stringValue,
            edgeHost: body["edgeHost"]?.stringValue,
            prefetched: mboxes(body["prefetch"]?["mboxes"]),
            executed: mboxes(body["execute"]?["mboxes"]),
            acknowledgedNotificationIds: AcknowledgedIDs(
                (body["notifications"]?.arrayValue ?? []).lazy.compactMap { $0["id"]?.stringValue }
            )
        )
    }

    private static func mboxes(_ value: JSONValue?) -> [Mbox] {
        (value?.arrayValue ?? []).compactMap { mbox -> Mbox? in
            guard let name = mbox["name"]?.stringValue else { return nil }
            let options = (mbox["options"]?.arrayValue ?? []).compactMap { option -> OfferOption? in
                guard let content = option["content"] else { return nil }
                return OfferOption(
                    type: option["type"]?.stringValue ?? "html",
                    content: content,
                    eventToken: option["eventToken"]?.stringValue
                )
            }
            let click = (mbox["metrics"]?.arrayValue ?? []).first {
                $0["type"]?.stringValue == "click" && !($0["eventToken"]?.stringValue ?? "").isEmpty
            }
            var data = JSONObject()
            if let tokens = (mbox["options"]?.arrayValue ?? []).lazy.compactMap({ $0["responseTokens"] }).first {
                data["responseTokens"] = tokens
            }
            if let payload = mbox["analytics"]?["payload"] { data["analyticsPayload"] = payload }
            if let payload = click?["analytics"]?["payload"] { data["clickMetricAnalyticsPayload"] = payload }
            return Mbox(
                name: name,
                state: mbox["state"]?.stringValue,
                options: options,
                clickToken: click?["eventToken"]?.stringValue,
                data: data.isEmpty ? nil : data,
                trace: mbox["trace"]
            )
        }
    }
}

extension JSONObject {
    mutating func merge(_ other: JSONObject) {
        for member in other { self[member.key] = member.value }
    }
}
