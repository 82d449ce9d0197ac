/// An app request on the cached path, read in one pass over its bytes without a JSON tree.
///
/// `read` knows the shapes apps send for the commands that can be answered at once (`ping`,
/// `loadRequests`, `preauthorize`) and parses them straight into the typed command. It accepts only
/// what it can prove valid, and returns nil for anything else: a body with an error to report, an
/// unusual but legal body (escaped keys, `\u` escapes, non-ASCII text, `null` members, unknown
/// members, `args` before `cmd`, product or order parameters), or another command. The general path
/// (`Request.decode` then `AppCommand.decode`) then decides, errors included, so this reader never
/// has a message of its own, and what it accepts it reads exactly as the general path would: the
/// request-path fuzzer checks both against each other on every input.
///
/// Why it exists: building and walking the tree cost about 12,000 instructions per cached load,
/// a third of the agent's work for it (docs/BENCHMARKS.md, `tools/bench --profile`).
public struct FastRequest: Sendable, Hashable {
    public var id: String
    /// `.ping`, `.loadRequests` or `.preauthorize`.
    public var command: AppCommand

    public init(id: String, command: AppCommand) {
        self.id = id
        self.command = command
    }

    /// The command of the table this is.
    public var name: Command { command.command }

    /// Reads a plain, valid `ping`, `loadRequests` or `preauthorize`; nil means "use the general path".
    public static func read(_ body: [UInt8], limits: CommandLimits, maxBodyBytes: Int) -> FastRequest? {
        body.withUnsafeBufferPointer { read($0, limits: limits, maxBodyBytes: maxBodyBytes) }
    }

    /// `read(_:limits:maxBodyBytes:)` over bytes in place (the agent reads a request where libzmq received it).
    public static func read(
        _ body: UnsafeBufferPointer<UInt8>,
        limits: CommandLimits,
        maxBodyBytes: Int
    ) -> FastRequest? {
        guard body.count <= maxBodyBytes else { return nil }
        var scanner = FastScanner(bytes: body, limits: limits)
        return scanner.request()
    }
}

/// The cached load apps send most, read in place: `loadRequests` of one mbox with nothing but its `name` and
/// `defaultContent`, every string plain (printable ASCII, no escapes). Its parts are ranges of the body, so a
/// load the cache answers makes no `String` but the name and no array at all: `FastRequest` and its command,
/// made and destroyed, cost a cached load about 2,500 instructions of the I/O thread's 16,700
/// (docs/BENCHMARKS.md).
///
/// `FastRequest.readPlainLoad` accepts a subset of what `FastRequest.read` does, and reads it the same:
/// the request-path fuzzer checks the two against each other.
public struct PlainLoad: Sendable, Hashable {
    /// The request's `id`: its bytes are those of its JSON string, as the reply writes it.
    public var id: Range<Int>
    /// The mbox's name, and its default content, as they are (no escapes to decode).
    public var name: Range<Int>
    public var defaultContent: Range<Int>

    public init(id: Range<Int>, name: Range<Int>, defaultContent: Range<Int>) {
        self.id = id
        self.name = name
        self.defaultContent = defaultContent
    }
}

extension FastRequest {
    /// Reads a plain load (`PlainLoad`) of `body`; nil for any other body, which `read` then reads.
    public static func readPlainLoad(
        _ body: UnsafeBufferPointer<UInt8>,
        limits: CommandLimits,
        maxBodyBytes: Int
    ) -> PlainLoad? {
        guard body.count <= maxBodyBytes, limits.maxMboxes >= 1 else { return nil }
        var scanner = FastScanner(bytes: body, limits: limits)
        switch scanner.writtenPlainLoad() {
        case .load(let load): return load
        case .other: return nil
        case .unknown:
            scanner.index = 0
            return scanner.plainLoad()
        }
    }
}

/// The single-pass reader behind `FastRequest.read` (and `NotificationAnswer.read`). Every method returns nil
/// (or false) as soon as the input leaves the plain shape; nothing is thrown and nothing is reported.
struct FastScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    private let limits: CommandLimits
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, limits: CommandLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: the envelope

    mutating func request() -> FastRequest? {
        var sawVersion = false
        var id: String?
        var command: Command?
        var parsed: AppCommand?
        var sawArgs = false
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "v") {
                guard !sawVersion, scanner.takeVersionOne() else { return false }
                sawVersion = true
            } else if scanner.matches(key, "id") {
                guard id == nil, let text = scanner.string(), (1...Request.maxIDLength).contains(text.utf8.count) else {
                    return false
                }
                id = text
            } else if scanner.matches(key, "cmd") {
                guard command == nil, let name = scanner.rawString(), let known = scanner.oneShotCommand(named: name)
                else { return false }
                command = known
            } else if scanner.matches(key, "args") {
                // The arguments' shape depends on the command: apps send `cmd` first.
                guard !sawArgs, let known = command else { return false }
                sawArgs = true
                switch known {
                case .ping:
                    guard scanner.members(nonEmpty: false, { _, _ in false }) else { return false }
                    parsed = .ping
                case .loadRequests:
                    guard let arguments = scanner.loadRequestsArguments() else { return false }
                    parsed = .loadRequests(arguments)
                case .preauthorize:
                    guard let arguments = scanner.preauthorizeArguments() else { return false }
                    parsed = .preauthorize(arguments)
                default:
                    return false  // declared .oneShot without a reader here: the general path reads it
                }
            } else {
                return false
            }
            return true
        }
        skipWhitespace()
        guard read, index == bytes.count, sawVersion, let id, let command else { return nil }
        switch (command, parsed) {
        case (.ping, nil): return FastRequest(id: id, command: .ping)
        case (_, let parsed?): return FastRequest(id: id, command: parsed)
        default: return nil  // loadRequests or preauthorize without args
        }
    }

    /// What `writtenPlainLoad` made of a body.
    enum WrittenPlainLoad {
        case load(PlainLoad)
        /// Another command: no plain load, however its members are written.
        case other
        /// Written some other way: `plainLoad()` decides.
        case unknown
    }

    /// A plain load as the agent's clients write it (`PreflightClient` and the Python client: compact, members in
    /// this order), `{"v":1,"id":"…","cmd":"loadRequests","args":{"requests":[{"name":"…","defaultContent":"…"}]}}`:
    /// its fixed parts compared whole, only its three strings read. Read member by member, the same load was
    /// about 1,750 instructions of the I/O thread's 15,000 (tools/bench --profile). Whatever this reads,
    /// `plainLoad()` reads the same (a test holds them together on every mutation).
    mutating func writtenPlainLoad() -> WrittenPlainLoad {
        guard skip(#"{"v":1,"id":"#), let id = rawString(), (1...Request.maxIDLength).contains(id.count),
            skip(#","cmd":"#)
        else { return .unknown }
        guard let command = rawString() else { return .unknown }
        // A member repeated (a second `cmd`) is refused by `plainLoad()` too.
        guard matches(command, "loadRequests") else { return .other }
        guard skip(#","args":{"requests":[{"name":"#), let name = rawString(),
            (1...TargetLimits.mboxNameLength).contains(name.count), skip(#","defaultContent":"#),
            let defaultContent = rawString(), skip("}]}}")
        else { return .unknown }
        skipWhitespace()
        guard index == bytes.count else { return .unknown }
        return .load(PlainLoad(id: id, name: name, defaultContent: defaultContent))
    }

    /// Consumes `byte` if it is next (no whitespace skipped; `take` skips it).
    mutating func skip(_ byte: UInt8) -> Bool {
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// Consumes `literal` if its bytes are next (no whitespace skipped). Inlined: the literal's length is then known
    /// where it is compared.
    @inline(__always)
    mutating func skip(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count, bytes(at: index, are: literal) else { return false }
        index += count
        return true
    }

    /// Whether the bytes from `offset` on are `literal`'s; the caller has checked that as many are there. The one
    /// comparison of bytes with a literal (`skip`, `matches`).
    @inline(__always)
    func bytes(at offset: Int, are literal: StaticString) -> Bool {
        // A literal of one scalar may be held as that scalar: `withUTF8Buffer` gives its bytes either way.
        literal.withUTF8Buffer { expected in
            guard let start = bytes.baseAddress, let wanted = expected.baseAddress else { return expected.isEmpty }
            return Self.equal(UnsafeRawPointer(start + offset), UnsafeRawPointer(wanted), count: expected.count)
        }
    }

    /// Whether `count` bytes at `a` and `b` are equal, compared a word at a time in place, the last word overlapping
    /// the one before: the plain load's fixed parts (4 to 29 bytes) through `memcmp` were about 2% of the I/O
    /// thread's cycles in a flood (`perf record`), mostly the call and its dispatch on length.
    @inline(__always)
    static func equal(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
        func word(_ pointer: UnsafeRawPointer, _ offset: Int) -> UInt64 {
            pointer.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
        }
        func half(_ pointer: UnsafeRawPointer, _ offset: Int) -> UInt32 {
            pointer.loadUnaligned(fromByteOffset: offset, as: UInt32.self)
        }
        if count >= 8 {
            var offset = 0
            while offset + 8 < count {
                guard word(a, offset) == word(b, offset) else { return false }
                offset += 8
            }
            return word(a, count - 8) == word(b, count - 8)
        }
        if count >= 4 { return half(a, 0) == half(b, 0) && half(a, count - 4) == half(b, count - 4) }
        for offset in 0..<count
        where a.load(fromByteOffset: offset, as: UInt8.self) != b.load(fromByteOffset: offset, as: UInt8.self) {
            return false
        }
        return true
    }

    /// `request()` restricted to a plain load: the same members, checks and order rule (`cmd` before `args`),
    /// each string taken as its range only when it is plain.
    mutating func plainLoad() -> PlainLoad? {
        var sawVersion = false
        var id: Range<Int>?
        var sawCommand = false
        var request: (name: Range<Int>, defaultContent: Range<Int>)?
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "v") {
                guard !sawVersion, scanner.takeVersionOne() else { return false }
                sawVersion = true
            } else if scanner.matches(key, "id") {
                guard id == nil, let text = scanner.rawString(), (1...Request.maxIDLength).contains(text.count) else {
                    return false
                }
                id = text
            } else if scanner.matches(key, "cmd") {
                guard !sawCommand, let name = scanner.rawString(), scanner.matches(name, "loadRequests") else {
                    return false
                }
                sawCommand = true
            } else if scanner.matches(key, "args") {
                guard sawCommand, request == nil, let one = scanner.plainLoadArguments() else { return false }
                request = one
            } else {
                return false
            }
            return true
        }
        skipWhitespace()
        guard read, index == bytes.count, sawVersion, let id, let request else { return nil }
        return PlainLoad(id: id, name: request.name, defaultContent: request.defaultContent)
    }

    /// `{"requests":[{"name":…,"defaultContent":…}]}`, the members of the one request in either order.
    private mutating func plainLoadArguments() -> (name: Range<Int>, defaultContent: Range<Int>)? {
        var request: (name: Range<Int>, defaultContent: Range<Int>)?
        let read = members(nonEmpty: true) { scanner, key in
            guard request == nil, scanner.matches(key, "requests"), scanner.take(UInt8(ascii: "[")),
                let one = scanner.plainLoadRequest(), scanner.take(UInt8(ascii: "]"))
            else { return false }
            request = one
            return true
        }
        return read ? request : nil
    }

    private mutating func plainLoadRequest() -> (name: Range<Int>, defaultContent: Range<Int>)? {
        var name: Range<Int>?
        var defaultContent: Range<Int>?
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "name") {
                guard name == nil, let text = scanner.rawString(),
                    (1...TargetLimits.mboxNameLength).contains(text.count)
                else { return false }
                name = text
            } else if scanner.matches(key, "defaultContent") {
                guard defaultContent == nil, let text = scanner.rawString() else { return false }
                defaultContent = text
            } else {
                return false
            }
            return true
        }
        guard read, let name, let defaultContent else { return nil }
        return (name, defaultContent)
    }

    /// `"v": 1` exactly: the integer one, not `1.0` or `10`.
    private mutating func takeVersionOne() -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "1") else { return false }
        index += 1
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case 0x20, 0x09, 0x0A, 0x0D, UInt8(ascii: ","), UInt8(ascii: "}"): return true
        default: return false
        }
    }

    // MARK: loadRequests

    private mutating func loadRequestsArguments() -> LoadRequestsCommand? {
        var requests: [LoadRequest]?
        var profile: [Parameter]?
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "requests") {
                guard requests == nil, let list = scanner.loadRequestList() else { return false }
                requests = list
            } else if scanner.matches(key, "profileParameters") {
                guard profile == nil, let parameters = scanner.parameters(reserved: false) else { return false }
                profile = parameters
            } else {
                return false
            }
            return true
        }
        guard read, let requests else { return nil }
        return LoadRequestsCommand(requests: requests, profileParameters: profile ?? [])
    }

    private mutating func loadRequestList() -> [LoadRequest]? {
        var requests: [LoadRequest] = []
        let read = elements(nonEmpty: true) { scanner in
            guard requests.count < scanner.limits.maxMboxes, let request = scanner.loadRequest() else { return false }
            requests.append(request)
            return true
        }
        return read ? requests : nil
    }

    private mutating func loadRequest() -> LoadRequest? {
        var name: String?
        var defaultContent: String?
        var mboxParameters: [Parameter]?
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "name") {
                guard name == nil, let text = scanner.string(),
                    (1...TargetLimits.mboxNameLength).contains(text.utf8.count)
                else { return false }
                name = text
            } else if scanner.matches(key, "defaultContent") {
                guard defaultContent == nil, let text = scanner.string() else { return false }
                defaultContent = text
            } else if scanner.matches(key, "mboxParameters") {
                guard mboxParameters == nil, let parameters = scanner.parameters(reserved: true) else { return false }
                mboxParameters = parameters
            } else {
                return false
            }
            return true
        }
        guard read, let name, let defaultContent else { return nil }
        return LoadRequest(
            name: name,
            defaultContent: defaultContent,
            targeting: MboxTargeting(mboxParameters: mboxParameters ?? [])
        )
    }

    /// A parameter object within every limit of PROTOCOL.md; `reserved` refuses the names Target keeps
    /// for order data (mbox parameters only). Keys are read as strings (they are the parameters' names).
    private mutating func parameters(reserved: Bool) -> [Parameter]? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var parameters: [Parameter] = []
        if take(UInt8(ascii: "}")) { return parameters }
        repeat {
            guard parameters.count < TargetLimits.parameterCount, let name = string(),
                (1...TargetLimits.parameterNameLength).contains(name.utf8.count), !name.hasPrefix("profile."),
                !reserved || !TargetLimits.reservedMboxParameterNames.contains(name),
                !parameters.contains(where: { $0.name == name }),
                take(UInt8(ascii: ":")), let value = string(), value.utf8.count <= TargetLimits.parameterValueLength
            else { return nil }
            parameters.append(Parameter(name, value))
            guard endOfMember(closing: UInt8(ascii: "}")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return parameters
    }

    // MARK: preauthorize

    private mutating func preauthorizeArguments() -> PreauthorizeCommand? {
        var requestor: String?
        var resources: [String]?
        var features: Set<PreauthorizeFeature>?
        let read = members(nonEmpty: true) { scanner, key in
            if scanner.matches(key, "requestor") {
                guard requestor == nil, let text = scanner.string(),
                    (1...PreauthorizeCommand.requestorLength).contains(text.utf8.count)
                else { return false }
                requestor = text
            } else if scanner.matches(key, "resources") {
                guard resources == nil, let list = scanner.resourceList() else { return false }
                resources = list
            } else if scanner.matches(key, "disabledFeatures") {
                guard features == nil, let set = scanner.featureSet() else { return false }
                features = set
            } else {
                return false
            }
            return true
        }
        guard read, let requestor, let resources else { return nil }
        return PreauthorizeCommand(requestor: requestor, resources: resources, disabledFeatures: features ?? [])
    }

    private mutating func resourceList() -> [String]? {
        var resources: [String] = []
        let read = elements(nonEmpty: true) { scanner in
            guard resources.count < scanner.limits.maxResources, let resource = scanner.string(),
                (1...PreauthorizeCommand.resourceLength).contains(resource.utf8.count)
            else { return false }
            resources.append(resource)
            return true
        }
        return read ? resources : nil
    }

    private mutating func featureSet() -> Set<PreauthorizeFeature>? {
        var features: Set<PreauthorizeFeature> = []
        let read = elements(nonEmpty: false) { scanner in
            guard let name = scanner.rawString() else { return false }
            if scanner.matches(name, "LOCAL_CACHE") {
                features.insert(.localCache)
            } else if scanner.matches(name, "REMOTE_CACHE") {
                features.insert(.remoteCache)
            } else {
                return false
            }
            return true
        }
        return read ? features : nil
    }

    // MARK: structure

    /// An object whose keys are plain: `member` reads the value of each key (the scanner stands after its
    /// `:`) and says whether it was acceptable. False for an empty object when `nonEmpty`, a bad key, a
    /// refused member, or a separator out of place.
    private mutating func members(nonEmpty: Bool, _ member: (inout FastScanner, Range<Int>) -> Bool) -> Bool {
        guard take(UInt8(ascii: "{")) else { return false }
        if take(UInt8(ascii: "}")) { return !nonEmpty }
        repeat {
            guard let key = rawKey(), member(&self, key), endOfMember(closing: UInt8(ascii: "}")) else { return false }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return true
    }

    /// An array: `element` reads each element and says whether it was acceptable.
    private mutating func elements(nonEmpty: Bool, _ element: (inout FastScanner) -> Bool) -> Bool {
        guard take(UInt8(ascii: "[")) else { return false }
        if take(UInt8(ascii: "]")) { return !nonEmpty }
        repeat {
            guard element(&self), endOfMember(closing: UInt8(ascii: "]")) else { return false }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return true
    }

    // MARK: tokens

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Skips whitespace, then consumes `byte` if it is next.
    mutating func take(_ byte: UInt8) -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == byte else { return false }
        index += 1
        return true
    }

    /// After a member or element: `,` (more follow) or `closing` (the last); the byte just consumed
    /// tells which.
    private mutating func endOfMember(closing: UInt8) -> Bool {
        take(UInt8(ascii: ",")) || take(closing)
    }

    /// A member's key and the `:` after it, as the range of its bytes (plain keys only).
    private mutating func rawKey() -> Range<Int>? {
        guard let key = rawString(), take(UInt8(ascii: ":")) else { return nil }
        return key
    }

    /// A string of printable ASCII without escapes, as the range of its bytes: eight bytes at a time
    /// (`PlainRun`); a 36-character id was about 330 instructions byte by byte.
    mutating func rawString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        let end = PlainRun.end(of: bytes, from: start, ascii: true)
        guard end < bytes.count, bytes[end] == UInt8(ascii: "\"") else { return nil }
        index = end + 1
        return start..<end
    }

    /// A string of ASCII text, with the two-character escapes decoded (`\"`, `\\`, `\/`, `\b`, `\f`,
    /// `\n`, `\r`, `\t`); nil for `\u` escapes, control characters and bytes beyond ASCII. Its length in
    /// bytes is then its length in Unicode scalars, which is what the protocol's limits count.
    private mutating func string() -> String? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<(index - 1)]), as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") { return escapedString(from: start) }
            guard byte >= 0x20, byte < 0x80 else { return nil }
            index += 1
        }
        return nil
    }

    private mutating func escapedString(from start: Int) -> String? {
        var buffer = Array(UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return String(decoding: buffer, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard index < bytes.count else { return nil }
                let escaped = bytes[index]
                index += 1
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(escaped)
                case UInt8(ascii: "b"): buffer.append(0x08)
                case UInt8(ascii: "f"): buffer.append(0x0C)
                case UInt8(ascii: "n"): buffer.append(0x0A)
                case UInt8(ascii: "r"): buffer.append(0x0D)
                case UInt8(ascii: "t"): buffer.append(0x09)
                default: return nil
                }
            case 0x20..<0x80:
                buffer.append(byte)
            default:
                return nil
            }
        }
        return nil
    }

    /// The one-pass command whose wire name the bytes in `range` spell, if any: a length check first, so
    /// most names are turned down without reading a byte.
    func oneShotCommand(named range: Range<Int>) -> Command? {
        for entry in Command.oneShot where entry.name.count == range.count {
            let equal = entry.name.withUnsafeBufferPointer { name in
                var offset = 0
                while offset < name.count, bytes[range.lowerBound + offset] == name[offset] { offset += 1 }
                return offset == name.count
            }
            if equal { return entry.command }
        }
        return nil
    }

    func matches(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        range.count == literal.utf8CodeUnitCount && bytes(at: range.lowerBound, are: literal)
    }
}
