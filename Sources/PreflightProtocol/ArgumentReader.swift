/// Reads typed arguments out of a JSON object, naming the exact field at fault when one is wrong.
///
/// Every failure is an `invalid_argument` `ProtocolError` whose `field` is a path into the request
/// such as `requests[1].productParameters.color`.
public struct ArgumentReader: Sendable {
    public let object: JSONObject
    public let path: String

    public init(_ object: JSONObject, path: String = "") {
        self.object = object
        self.path = path
    }

    /// The path of a member of this object.
    public func fieldPath(_ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    public func has(_ key: String) -> Bool {
        object[key] != nil
    }

    public func requiredString(_ key: String) throws(ProtocolError) -> String {
        guard let value = object[key] else {
            throw .invalidArgument(fieldPath(key), "\(key) is required")
        }
        guard case .string(let text) = value else {
            throw .invalidArgument(fieldPath(key), "\(key) must be a string, got \(value.typeName)")
        }
        return text
    }

    public func optionalString(_ key: String) throws(ProtocolError) -> String? {
        switch object[key] {
        case nil, .null: return nil
        case .string(let text): return text
        case let other?: throw .invalidArgument(fieldPath(key), "\(key) must be a string, got \(other.typeName)")
        }
    }

    public func optionalBool(_ key: String) throws(ProtocolError) -> Bool? {
        switch object[key] {
        case nil, .null: return nil
        case .bool(let flag): return flag
        case let other?: throw .invalidArgument(fieldPath(key), "\(key) must be a boolean, got \(other.typeName)")
        }
    }

    public func optionalInteger(_ key: String) throws(ProtocolError) -> Int64? {
        switch object[key] {
        case nil, .null: return nil
        case .integer(let number): return number
        case let other?: throw .invalidArgument(fieldPath(key), "\(key) must be an integer, got \(other.typeName)")
        }
    }

    public func requiredArray(_ key: String) throws(ProtocolError) -> [JSONValue] {
        guard let value = object[key] else {
            throw .invalidArgument(fieldPath(key), "\(key) is required")
        }
        guard case .array(let elements) = value else {
            throw .invalidArgument(fieldPath(key), "\(key) must be an array, got \(value.typeName)")
        }
        return elements
    }

    public func optionalArray(_ key: String) throws(ProtocolError) -> [JSONValue]? {
        switch object[key] {
        case nil, .null: return nil
        case .array(let elements): return elements
        case let other?: throw .invalidArgument(fieldPath(key), "\(key) must be an array, got \(other.typeName)")
        }
    }

    public func optionalObject(_ key: String) throws(ProtocolError) -> ArgumentReader? {
        switch object[key] {
        case nil, .null: return nil
        case .object(let member): return ArgumentReader(member, path: fieldPath(key))
        case let other?: throw .invalidArgument(fieldPath(key), "\(key) must be an object, got \(other.typeName)")
        }
    }

    /// Each element of an array member as an object reader (`mboxes[3]`).
    public func objects(in key: String, _ elements: [JSONValue]) throws(ProtocolError) -> [ArgumentReader] {
        var readers: [ArgumentReader] = []
        readers.reserveCapacity(elements.count)
        for (index, element) in elements.enumerated() {
            let elementPath = "\(fieldPath(key))[\(index)]"
            guard case .object(let member) = element else {
                throw .invalidArgument(elementPath, "\(key)[\(index)] must be an object, got \(element.typeName)")
            }
            readers.append(ArgumentReader(member, path: elementPath))
        }
        return readers
    }

    /// Refuses members other than `allowed`, for objects whose keys are a closed set.
    public func onlyKeys(_ allowed: [String], describing name: String) throws(ProtocolError) {
        for key in object.keys where !allowed.contains(key) {
            throw .invalidArgument(
                fieldPath(key),
                "\(name) allows only \(allowed.joined(separator: " and ")); got \(key)"
            )
        }
    }
}

extension String {
    /// Length in Unicode scalars: what "characters" means in the protocol's limits (as in Java and
    /// JavaScript code points, and cheap to count on a hostile 1 MiB string).
    @inlinable
    public var scalarCount: Int { unicodeScalars.count }
}
