/// One name/value pair of `mboxParameters` or `profileParameters`, in the order the app sent them.
public struct Parameter: Sendable, Hashable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// `productParameters`: Target allows exactly `id` and `categoryId`.
public struct ProductParameters: Sendable, Hashable {
    public var id: String?
    public var categoryId: String?

    public init(id: String? = nil, categoryId: String? = nil) {
        self.id = id
        self.categoryId = categoryId
    }
}

/// `orderParameters`, normalised: `total` as a number, `purchasedProductIds` as an array even when
/// the app sent one comma-separated string (as the SDK's `TargetOrder` allows).
public struct OrderParameters: Sendable, Hashable {
    public var id: String?
    public var total: Double?
    public var purchasedProductIds: [String]?

    public init(id: String? = nil, total: Double? = nil, purchasedProductIds: [String]? = nil) {
        self.id = id
        self.total = total
        self.purchasedProductIds = purchasedProductIds
    }
}

/// The parameters every mbox in a command carries (the SDK's TargetParameters).
public struct MboxTargeting: Sendable, Hashable {
    public var mboxParameters: [Parameter]
    public var product: ProductParameters?
    public var order: OrderParameters?

    public init(mboxParameters: [Parameter] = [], product: ProductParameters? = nil, order: OrderParameters? = nil) {
        self.mboxParameters = mboxParameters
        self.product = product
        self.order = order
    }
}

/// One mbox of a `prefetch` (the SDK's TargetPrefetchObject).
public struct PrefetchMbox: Sendable, Hashable {
    public var name: String
    public var targeting: MboxTargeting

    public init(name: String, targeting: MboxTargeting = MboxTargeting()) {
        self.name = name
        self.targeting = targeting
    }
}

/// `prefetch` arguments (targetPrefetchContent).
public struct PrefetchCommand: Sendable, Hashable {
    public var mboxes: [PrefetchMbox]
    public var profileParameters: [Parameter]
    /// How long this app waits for Target (`timeout`); the configured `target.timeout` when nil or longer.
    public var timeout: Duration?
    /// The Target property (workspace) asked for (`propertyToken`, AEP's `at_property`); nil: the configured one.
    public var propertyToken: String?

    public init(
        mboxes: [PrefetchMbox],
        profileParameters: [Parameter] = [],
        timeout: Duration? = nil,
        propertyToken: String? = nil
    ) {
        self.mboxes = mboxes
        self.profileParameters = profileParameters
        self.timeout = timeout
        self.propertyToken = propertyToken
    }
}

/// One request of a `loadRequests` (the SDK's TargetRequestObject).
public struct LoadRequest: Sendable, Hashable {
    public var name: String
    public var defaultContent: String
    public var targeting: MboxTargeting

    public init(name: String, defaultContent: String, targeting: MboxTargeting = MboxTargeting()) {
        self.name = name
        self.defaultContent = defaultContent
        self.targeting = targeting
    }
}

/// `loadRequests` arguments (targetLoadRequests).
public struct LoadRequestsCommand: Sendable, Hashable {
    public var requests: [LoadRequest]
    public var profileParameters: [Parameter]
    /// Each content entry also carries `data` (response tokens, Analytics for Target payloads): AEP's
    /// `contentWithDataCallback`. Off by default, so the plain reply stays as small as it is.
    public var withData: Bool
    /// false: answers from the cache queue no display notification; the app sends it with
    /// `displayedLocations` when it shows the offer (AEP's way). Loads from Target are counted by Target.
    public var notifyDisplay: Bool
    /// The options few loads carry, boxed: a plain load stays two references and two flags, since every
    /// cached load's command is built and moved on the I/O thread.
    private var rare: RareLoadOptions?

    /// How long this app waits for Target before its default content (`timeout`); the configured
    /// `target.timeout` when nil or longer.
    public var timeout: Duration? {
        get { rare?.timeout }
        set { rare = RareLoadOptions.make(timeout: newValue, propertyToken: propertyToken) }
    }

    /// The Target property (workspace) asked for (`propertyToken`, AEP's `at_property`); nil: the configured one.
    public var propertyToken: String? {
        get { rare?.propertyToken }
        set { rare = RareLoadOptions.make(timeout: timeout, propertyToken: newValue) }
    }

    public init(
        requests: [LoadRequest],
        profileParameters: [Parameter] = [],
        withData: Bool = false,
        notifyDisplay: Bool = true,
        timeout: Duration? = nil,
        propertyToken: String? = nil
    ) {
        self.requests = requests
        self.profileParameters = profileParameters
        self.withData = withData
        self.notifyDisplay = notifyDisplay
        self.rare = RareLoadOptions.make(timeout: timeout, propertyToken: propertyToken)
    }
}

/// `loadRequests` options that few commands carry (immutable; a change makes a new box).
private final class RareLoadOptions: Sendable, Hashable {
    let timeout: Duration?
    let propertyToken: String?

    private init(timeout: Duration?, propertyToken: String?) {
        self.timeout = timeout
        self.propertyToken = propertyToken
    }

    /// nil when every option has its default.
    static func make(timeout: Duration?, propertyToken: String?) -> RareLoadOptions? {
        timeout == nil && propertyToken == nil ? nil : RareLoadOptions(timeout: timeout, propertyToken: propertyToken)
    }

    static func == (lhs: RareLoadOptions, rhs: RareLoadOptions) -> Bool {
        lhs.timeout == rhs.timeout && lhs.propertyToken == rhs.propertyToken
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(timeout)
        hasher.combine(propertyToken)
    }
}

/// The bounds PROTOCOL.md sets on Target arguments.
public enum TargetLimits {
    public static let mboxNameLength = 250
    /// Longest `propertyToken` (Target's are 36-character UUIDs).
    public static let propertyTokenLength = 128
    /// Longest per-request `timeout`, in seconds (the configured `target.timeout` bounds it further).
    public static let longestTimeout = 60.0
    public static let parameterCount = 50
    public static let parameterNameLength = 128
    public static let parameterValueLength = 5000
    public static let productFieldLength = 128
    public static let orderIdLength = 250
    public static let purchasedProductIdLength = 50
    public static let purchasedProductIdsJoinedLength = 250
    /// Mbox parameter names Target reserves for order data; apps must use `orderParameters`.
    public static let reservedMboxParameterNames: Set<String> = ["orderId", "orderTotal", "productPurchasedIds"]
}

extension PrefetchCommand {
    /// Reads and validates `prefetch` arguments.
    public static func decode(_ args: ArgumentReader, maxMboxes: Int) throws(ProtocolError) -> PrefetchCommand {
        let elements = try args.requiredArray("mboxes")
        try checkCount(elements, of: "mboxes", at: args.fieldPath("mboxes"), max: maxMboxes)
        var mboxes: [PrefetchMbox] = []
        mboxes.reserveCapacity(elements.count)
        for reader in try args.objects(in: "mboxes", elements) {
            mboxes.append(PrefetchMbox(name: try readMboxName(reader), targeting: try MboxTargeting.decode(reader)))
        }
        return PrefetchCommand(
            mboxes: mboxes,
            profileParameters: try readParameters(args, "profileParameters"),
            timeout: try readTimeout(args),
            propertyToken: try readPropertyToken(args)
        )
    }
}

extension LoadRequestsCommand {
    /// Reads and validates `loadRequests` arguments.
    public static func decode(_ args: ArgumentReader, maxMboxes: Int) throws(ProtocolError) -> LoadRequestsCommand {
        let elements = try args.requiredArray("requests")
        try checkCount(elements, of: "requests", at: args.fieldPath("requests"), max: maxMboxes)
        var requests: [LoadRequest] = []
        requests.reserveCapacity(elements.count)
        for reader in try args.objects(in: "requests", elements) {
            let name = try readMboxName(reader)
            let defaultContent = try reader.requiredString("defaultContent")
            requests.append(
                LoadRequest(name: name, defaultContent: defaultContent, targeting: try MboxTargeting.decode(reader))
            )
        }
        return LoadRequestsCommand(
            requests: requests,
            profileParameters: try readParameters(args, "profileParameters"),
            withData: try args.optionalBool("withData") ?? false,
            notifyDisplay: try args.optionalBool("notifyDisplay") ?? true,
            timeout: try readTimeout(args),
            propertyToken: try readPropertyToken(args)
        )
    }
}

extension MboxTargeting {
    static func decode(_ reader: ArgumentReader) throws(ProtocolError) -> MboxTargeting {
        let parameters = try readParameters(reader, "mboxParameters")
        for parameter in parameters where TargetLimits.reservedMboxParameterNames.contains(parameter.name) {
            throw .invalidArgument(
                reader.fieldPath("mboxParameters.\(parameter.name)"),
                "mbox parameter \(parameter.name) is reserved by Target; pass order data in orderParameters"
            )
        }
        return MboxTargeting(
            mboxParameters: parameters,
            product: try ProductParameters.decode(reader.optionalObject("productParameters")),
            order: try OrderParameters.decode(reader.optionalObject("orderParameters"))
        )
    }
}

extension ProductParameters {
    static func decode(_ reader: ArgumentReader?) throws(ProtocolError) -> ProductParameters? {
        guard let reader else { return nil }
        try reader.onlyKeys(["id", "categoryId"], describing: "productParameters")
        var product = ProductParameters()
        product.id = try readBoundedString(reader, "id", max: TargetLimits.productFieldLength)
        product.categoryId = try readBoundedString(reader, "categoryId", max: TargetLimits.productFieldLength)
        return product
    }
}

extension OrderParameters {
    static func decode(_ reader: ArgumentReader?) throws(ProtocolError) -> OrderParameters? {
        guard let reader else { return nil }
        try reader.onlyKeys(["id", "total", "purchasedProductIds"], describing: "orderParameters")
        var order = OrderParameters()
        order.id = try readBoundedString(reader, "id", max: TargetLimits.orderIdLength)
        order.total = try readTotal(reader)
        order.purchasedProductIds = try readPurchasedProductIds(reader)
        return order
    }

    private static func readTotal(_ reader: ArgumentReader) throws(ProtocolError) -> Double? {
        let field = reader.fieldPath("total")
        let total: Double
        switch reader.object["total"] {
        case nil, .null:
            return nil
        case .integer(let number):
            total = Double(number)
        case .number(let number):
            total = number
        case .string(let text):
            let trimmed = text.trimmingASCIIWhitespace()
            // Only plain decimal notation: "1e3", "nan" and "inf" are not order totals.
            guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ ($0 >= 48 && $0 <= 57) || $0 == 46 || $0 == 45 }),
                let number = Double(trimmed), number.isFinite
            else {
                throw .invalidArgument(field, "total must be a number or a string holding a number; got \"\(text)\"")
            }
            total = number
        case let other?:
            throw .invalidArgument(field, "total must be a number or a string holding a number, got \(other.typeName)")
        }
        guard total >= 0 else { throw .invalidArgument(field, "total must be at least 0") }
        return total
    }

    private static func readPurchasedProductIds(_ reader: ArgumentReader) throws(ProtocolError) -> [String]? {
        let field = reader.fieldPath("purchasedProductIds")
        var ids: [String] = []
        switch reader.object["purchasedProductIds"] {
        case nil, .null:
            return nil
        case .string(let text):
            ids = text.split(separator: ",", omittingEmptySubsequences: true)
                .map { String($0).trimmingASCIIWhitespace() }
                .filter { !$0.isEmpty }
        case .array(let elements):
            for (index, element) in elements.enumerated() {
                guard case .string(let text) = element else {
                    throw .invalidArgument(
                        "\(field)[\(index)]",
                        "purchasedProductIds must hold strings, got \(element.typeName)"
                    )
                }
                ids.append(text)
            }
        case let other?:
            throw .invalidArgument(
                field,
                "purchasedProductIds must be an array of strings or one comma-separated string, got \(other.typeName)"
            )
        }
        for (index, id) in ids.enumerated() where id.isEmpty || id.scalarCount > TargetLimits.purchasedProductIdLength {
            throw .invalidArgument(
                "\(field)[\(index)]",
                "each purchased product id must be 1 to \(TargetLimits.purchasedProductIdLength) characters"
            )
        }
        let joinedLength = ids.reduce(0) { $0 + $1.scalarCount } + max(ids.count - 1, 0)
        guard joinedLength <= TargetLimits.purchasedProductIdsJoinedLength else {
            throw .invalidArgument(
                field,
                "purchasedProductIds joined with commas must be at most \(TargetLimits.purchasedProductIdsJoinedLength) "
                    + "characters; got \(joinedLength)"
            )
        }
        return ids
    }
}

/// `timeout`: seconds above 0, at most `TargetLimits.longestTimeout`.
private func readTimeout(_ args: ArgumentReader) throws(ProtocolError) -> Duration? {
    guard let value = args.object["timeout"], value != .null else { return nil }
    guard let seconds = value.doubleValue, seconds > 0, seconds <= TargetLimits.longestTimeout else {
        throw .invalidArgument(
            args.fieldPath("timeout"),
            "timeout must be a number of seconds above 0, at most \(Int(TargetLimits.longestTimeout))"
        )
    }
    return .milliseconds(Int64(seconds * 1000))
}

/// `propertyToken`: 1 to `TargetLimits.propertyTokenLength` printable ASCII characters (no space); null or
/// absent: the configured property.
func readPropertyToken(_ args: ArgumentReader) throws(ProtocolError) -> String? {
    guard let token = try args.optionalString("propertyToken") else { return nil }
    guard (1...TargetLimits.propertyTokenLength).contains(token.utf8.count),
        token.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
    else {
        throw .invalidArgument(
            args.fieldPath("propertyToken"),
            "propertyToken must be 1 to \(TargetLimits.propertyTokenLength) printable characters without spaces "
                + "(a Target property token), or null for the configured one"
        )
    }
    return token
}

private func checkCount(_ elements: [JSONValue], of name: String, at field: String, max: Int) throws(ProtocolError) {
    guard !elements.isEmpty else { throw .invalidArgument(field, "\(name) must not be empty") }
    guard elements.count <= max else {
        throw .invalidArgument(field, "at most \(max) \(name) per command; got \(elements.count)")
    }
}

private func readMboxName(_ reader: ArgumentReader) throws(ProtocolError) -> String {
    let name = try reader.requiredString("name")
    guard (1...TargetLimits.mboxNameLength).contains(name.scalarCount) else {
        throw .invalidArgument(reader.fieldPath("name"), "name must be 1 to \(TargetLimits.mboxNameLength) characters")
    }
    return name
}

private func readBoundedString(_ reader: ArgumentReader, _ key: String, max: Int) throws(ProtocolError) -> String? {
    guard let text = try reader.optionalString(key) else { return nil }
    guard text.scalarCount <= max else {
        throw .invalidArgument(reader.fieldPath(key), "\(key) must be at most \(max) characters")
    }
    return text
}

/// Reads a string-to-string parameter object (`mboxParameters`, `profileParameters`).
private func readParameters(_ reader: ArgumentReader, _ key: String) throws(ProtocolError) -> [Parameter] {
    guard let object = try reader.optionalObject(key) else { return [] }
    guard object.object.count <= TargetLimits.parameterCount else {
        throw .invalidArgument(
            object.path,
            "\(key) allows at most \(TargetLimits.parameterCount) entries; got \(object.object.count)"
        )
    }
    var parameters: [Parameter] = []
    parameters.reserveCapacity(object.object.count)
    for member in object.object {
        let field = object.fieldPath(member.key)
        guard (1...TargetLimits.parameterNameLength).contains(member.key.scalarCount) else {
            throw .invalidArgument(field, "parameter names must be 1 to \(TargetLimits.parameterNameLength) characters")
        }
        guard !member.key.hasPrefix("profile.") else {
            throw .invalidArgument(
                field,
                "parameter names must not start with \"profile.\"; pass profile attributes in profileParameters"
            )
        }
        guard case .string(let value) = member.value else {
            throw .invalidArgument(field, "parameter values must be strings, got \(member.value.typeName)")
        }
        guard value.scalarCount <= TargetLimits.parameterValueLength else {
            throw .invalidArgument(
                field,
                "parameter values must be at most \(TargetLimits.parameterValueLength) characters"
            )
        }
        parameters.append(Parameter(member.key, value))
    }
    return parameters
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
        guard let first = firstIndex(where: { !isSpace($0) }), let last = lastIndex(where: { !isSpace($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}

/// `clickedLocation` arguments (AEP's `clickedLocation(name, targetParameters)`): the mbox clicked, with
/// the parameters to send with the click.
public struct ClickedLocationCommand: Sendable, Hashable {
    public var name: String
    public var targeting: MboxTargeting
    public var profileParameters: [Parameter]
    /// The property the offer was loaded under; nil: the configured one.
    public var propertyToken: String?

    public init(
        name: String,
        targeting: MboxTargeting = MboxTargeting(),
        profileParameters: [Parameter] = [],
        propertyToken: String? = nil
    ) {
        self.name = name
        self.targeting = targeting
        self.profileParameters = profileParameters
        self.propertyToken = propertyToken
    }

    /// `{name, mboxParameters?, productParameters?, orderParameters?, profileParameters?, propertyToken?}`.
    public static func decode(_ args: ArgumentReader) throws(ProtocolError) -> ClickedLocationCommand {
        ClickedLocationCommand(
            name: try readMboxName(args),
            targeting: try MboxTargeting.decode(args),
            profileParameters: try readParameters(args, "profileParameters"),
            propertyToken: try readPropertyToken(args)
        )
    }
}

/// `displayedLocations` arguments (AEP's `displayedLocations(names, targetParameters)`): the mboxes the app
/// now shows, with the parameters to send (else those of the load that deferred the notification).
public struct DisplayedLocationsCommand: Sendable, Hashable {
    public var names: [String]
    /// nil: the parameters of the load.
    public var targeting: MboxTargeting?
    public var profileParameters: [Parameter]?
    /// The property the offers were loaded under; nil: the configured one.
    public var propertyToken: String?

    public init(
        names: [String],
        targeting: MboxTargeting? = nil,
        profileParameters: [Parameter]? = nil,
        propertyToken: String? = nil
    ) {
        self.names = names
        self.targeting = targeting
        self.profileParameters = profileParameters
        self.propertyToken = propertyToken
    }

    /// `{names: [1 to maxMboxes names], mboxParameters?, productParameters?, orderParameters?, profileParameters?}`.
    public static func decode(_ args: ArgumentReader, maxMboxes: Int) throws(ProtocolError) -> DisplayedLocationsCommand
    {
        let elements = try args.requiredArray("names")
        try checkCount(elements, of: "names", at: args.fieldPath("names"), max: maxMboxes)
        var names: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let name) = element, (1...TargetLimits.mboxNameLength).contains(name.scalarCount) else {
                throw .invalidArgument(
                    "\(args.fieldPath("names"))[\(index)]",
                    "names must be mbox names of 1 to \(TargetLimits.mboxNameLength) characters"
                )
            }
            names.append(name)
        }
        let targeted = args.has("mboxParameters") || args.has("productParameters") || args.has("orderParameters")
        return DisplayedLocationsCommand(
            names: names,
            targeting: targeted ? try MboxTargeting.decode(args) : nil,
            profileParameters: args.has("profileParameters") ? try readParameters(args, "profileParameters") : nil,
            propertyToken: try readPropertyToken(args)
        )
    }
}
