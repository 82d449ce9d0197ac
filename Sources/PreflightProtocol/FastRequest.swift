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

    /// The wire name of `command`.
    public var commandName: String {
        switch command {
        case .ping: CommandName.ping
        case .loadRequests: CommandName.loadRequests
        case .preauthorize: CommandName.preauthorize
        case .prefetch: CommandName.prefetch
        case .clearPrefetchCache: CommandName.clearPrefetchCache
        }
    }

    /// Reads a plain, valid `ping`, `loadRequests` or `preauthorize`; nil means "use the general path".
    public static func read(_ body: [UInt8], limits: CommandLimits, maxBodyBytes: Int) -> FastRequest? {
        guard body.count <= maxBodyBytes else { return nil }
        return body.withUnsafeBufferPointer { buffer in
            var scanner = FastScanner(bytes: buffer, limits: limits)
            return scanner.request()
        }
    }
}

/// The single-pass reader behind `FastRequest.read`. Every method returns nil (or false) as soon as
/// the input leaves the plain shape; nothing is thrown and nothing is reported.
struct FastScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private let limits: CommandLimits
    private var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, limits: CommandLimits) {
        self.bytes = bytes
        self.limits = limits
    }

    // MARK: the envelope

    private enum Command {
        case ping, loadRequests, preauthorize
    }

    mutating func request() -> FastRequest? {
        guard take(UInt8(ascii: "{")) else { return nil }
        var sawVersion = false
        var id: String?
        var command: Command?
        var parsed: AppCommand?
        var sawArgs = false
        var first = true
        while true {
            if first, take(UInt8(ascii: "}")) { return nil }  // {} has no id
            guard let key = rawKey() else { return nil }
            if matches(key, "v") {
                guard !sawVersion, takeVersionOne() else { return nil }
                sawVersion = true
            } else if matches(key, "id") {
                guard id == nil, let text = string(), (1...128).contains(text.utf8.count) else { return nil }
                id = text
            } else if matches(key, "cmd") {
                guard command == nil, let name = rawString() else { return nil }
                if matches(name, "ping") {
                    command = .ping
                } else if matches(name, "loadRequests") {
                    command = .loadRequests
                } else if matches(name, "preauthorize") {
                    command = .preauthorize
                } else {
                    return nil
                }
            } else if matches(key, "args") {
                // The arguments' shape depends on the command: apps send `cmd` first.
                guard !sawArgs, let known = command else { return nil }
                sawArgs = true
                switch known {
                case .ping:
                    guard take(UInt8(ascii: "{")), take(UInt8(ascii: "}")) else { return nil }
                    parsed = .ping
                case .loadRequests:
                    guard let arguments = loadRequestsArguments() else { return nil }
                    parsed = .loadRequests(arguments)
                case .preauthorize:
                    guard let arguments = preauthorizeArguments() else { return nil }
                    parsed = .preauthorize(arguments)
                }
            } else {
                return nil
            }
            first = false
            guard endOfMember(closing: UInt8(ascii: "}")) else { return nil }
            if bytes[index - 1] == UInt8(ascii: "}") { break }
        }
        skipWhitespace()
        guard index == bytes.count, sawVersion, let id, let command else { return nil }
        switch (command, parsed) {
        case (.ping, nil): return FastRequest(id: id, command: .ping)
        case (_, let parsed?): return FastRequest(id: id, command: parsed)
        default: return nil  // loadRequests or preauthorize without args
        }
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
        guard take(UInt8(ascii: "{")) else { return nil }
        var requests: [LoadRequest]?
        var profile: [Parameter]?
        if take(UInt8(ascii: "}")) { return nil }  // requests is required
        repeat {
            guard let key = rawKey() else { return nil }
            if matches(key, "requests") {
                guard requests == nil, let read = loadRequestList() else { return nil }
                requests = read
            } else if matches(key, "profileParameters") {
                guard profile == nil, let read = parameters(reserved: false) else { return nil }
                profile = read
            } else {
                return nil
            }
            guard endOfMember(closing: UInt8(ascii: "}")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        guard let requests else { return nil }
        return LoadRequestsCommand(requests: requests, profileParameters: profile ?? [])
    }

    private mutating func loadRequestList() -> [LoadRequest]? {
        guard take(UInt8(ascii: "[")), !take(UInt8(ascii: "]")) else { return nil }  // at least one
        var requests: [LoadRequest] = []
        repeat {
            guard requests.count < limits.maxMboxes, let request = loadRequest() else { return nil }
            requests.append(request)
            guard endOfMember(closing: UInt8(ascii: "]")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return requests
    }

    private mutating func loadRequest() -> LoadRequest? {
        guard take(UInt8(ascii: "{")), !take(UInt8(ascii: "}")) else { return nil }
        var name: String?
        var defaultContent: String?
        var mboxParameters: [Parameter]?
        repeat {
            guard let key = rawKey() else { return nil }
            if matches(key, "name") {
                guard name == nil, let text = string(), (1...TargetLimits.mboxNameLength).contains(text.utf8.count)
                else { return nil }
                name = text
            } else if matches(key, "defaultContent") {
                guard defaultContent == nil, let text = string() else { return nil }
                defaultContent = text
            } else if matches(key, "mboxParameters") {
                guard mboxParameters == nil, let read = parameters(reserved: true) else { return nil }
                mboxParameters = read
            } else {
                return nil
            }
            guard endOfMember(closing: UInt8(ascii: "}")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        guard let name, let defaultContent else { return nil }
        return LoadRequest(
            name: name,
            defaultContent: defaultContent,
            targeting: MboxTargeting(mboxParameters: mboxParameters ?? [])
        )
    }

    /// A parameter object within every limit of PROTOCOL.md; `reserved` refuses the names Target keeps
    /// for order data (mbox parameters only).
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
        guard take(UInt8(ascii: "{")), !take(UInt8(ascii: "}")) else { return nil }
        var requestor: String?
        var resources: [String]?
        var features: Set<PreauthorizeFeature>?
        repeat {
            guard let key = rawKey() else { return nil }
            if matches(key, "requestor") {
                guard requestor == nil, let text = string(),
                    (1...PreauthorizeCommand.requestorLength).contains(text.utf8.count)
                else { return nil }
                requestor = text
            } else if matches(key, "resources") {
                guard resources == nil, let read = resourceList() else { return nil }
                resources = read
            } else if matches(key, "disabledFeatures") {
                guard features == nil, let read = featureList() else { return nil }
                features = read
            } else {
                return nil
            }
            guard endOfMember(closing: UInt8(ascii: "}")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        guard let requestor, let resources else { return nil }
        return PreauthorizeCommand(requestor: requestor, resources: resources, disabledFeatures: features ?? [])
    }

    private mutating func resourceList() -> [String]? {
        guard take(UInt8(ascii: "[")), !take(UInt8(ascii: "]")) else { return nil }
        var resources: [String] = []
        repeat {
            guard resources.count < limits.maxResources, let resource = string(),
                (1...PreauthorizeCommand.resourceLength).contains(resource.utf8.count)
            else { return nil }
            resources.append(resource)
            guard endOfMember(closing: UInt8(ascii: "]")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return resources
    }

    private mutating func featureList() -> Set<PreauthorizeFeature>? {
        guard take(UInt8(ascii: "[")) else { return nil }
        var features: Set<PreauthorizeFeature> = []
        if take(UInt8(ascii: "]")) { return features }
        repeat {
            guard let name = rawString() else { return nil }
            if matches(name, "LOCAL_CACHE") {
                features.insert(.localCache)
            } else if matches(name, "REMOTE_CACHE") {
                features.insert(.remoteCache)
            } else {
                return nil
            }
            guard endOfMember(closing: UInt8(ascii: "]")) else { return nil }
        } while bytes[index - 1] == UInt8(ascii: ",")
        return features
    }

    // MARK: tokens

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    /// Skips whitespace, then consumes `byte` if it is next.
    private mutating func take(_ byte: UInt8) -> Bool {
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

    /// A string of printable ASCII without escapes, as the range of its bytes.
    private mutating func rawString() -> Range<Int>? {
        guard take(UInt8(ascii: "\"")) else { return nil }
        let start = index
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                return start..<(index - 1)
            }
            guard byte >= 0x20, byte < 0x80, byte != UInt8(ascii: "\\") else { return nil }
            index += 1
        }
        return nil
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

    private func matches(_ range: Range<Int>, _ literal: StaticString) -> Bool {
        guard range.count == literal.utf8CodeUnitCount else { return false }
        return literal.withUTF8Buffer { expected in
            var offset = 0
            while offset < expected.count {
                if bytes[range.lowerBound + offset] != expected[offset] { return false }
                offset += 1
            }
            return true
        }
    }
}
