// libFuzzer target over the agent's request path: everything an app's bytes go through before any
// work would go upstream (envelope, command decoding and validation, reply encoding). Built by
// tools/fuzz with `swiftc -sanitize=fuzzer,address` together with Sources/PreflightProtocol.
//
// Beyond "does not crash", it checks invariants a bug would break:
// - what the reader accepts, the writer writes back to the same value (no lossy round trip);
// - every reply the agent would send is valid JSON that a client decodes to the same id;
// - whatever the cached path's one-pass reader (`FastRequest`) accepts, the general path reads to the
//   same id and command;
// - whatever the plain load's reader (`FastRequest.readPlainLoad`) accepts, `FastRequest` reads to the same
//   id, name and default content, a load of one mbox with nothing else.

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequestPath(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))

    if let value = try? JSONReader.read(body) {
        let written = JSONWriter.encode(value)
        guard let reread = try? JSONReader.read(written), reread == value else {
            fatalError("JSON round trip changed the value of \(body.count) bytes")
        }
    }

    let limits = CommandLimits(maxMboxes: 50, maxResources: 100)
    let fast = FastRequest.read(body, limits: limits, maxBodyBytes: 1 << 20)
    let plain = body.withUnsafeBufferPointer { buffer in
        FastRequest.readPlainLoad(buffer, limits: limits, maxBodyBytes: 1 << 20).map { load in
            func text(_ range: Range<Int>) -> String { String(decoding: buffer[range], as: UTF8.self) }
            let request = LoadRequest(name: text(load.name), defaultContent: text(load.defaultContent))
            return FastRequest(id: text(load.id), command: .loadRequests(LoadRequestsCommand(requests: [request])))
        }
    }
    if let plain, plain != fast {
        fatalError("the plain load's reader read a body differently from the fast path")
    }
    let reply: [UInt8]
    let expectedID: String?
    switch Request.decode(body, maxBodyBytes: 1 << 20) {
    case .failure(let failure):
        if fast != nil { fatalError("the fast path accepted a body the general path refuses") }
        reply = Reply.failure(id: failure.id, error: failure.error)
        expectedID = failure.id
    case .success(let request):
        expectedID = request.id
        let general = try? AppCommand.decode(request, limits: limits)
        if let fast, general.flatMap({ $0 }).map({ FastRequest(id: request.id, command: $0) }) != fast {
            fatalError("the fast path read a body differently from the general path")
        }
        do {
            if let command = try AppCommand.decode(request, limits: limits) {
                reply = Reply.success(id: request.id, result: ["decoded": .string("\(command)".prefix(64).description)])
            } else {
                reply = Reply.failure(id: request.id, error: .unknownCommand(request.command))
            }
        } catch {
            guard error.code == .invalidArgument, error.field != nil else {
                fatalError("argument errors must be invalid_argument with a field, got \(error)")
            }
            reply = Reply.failure(id: request.id, error: error)
        }
    }
    guard let decoded = try? Reply.decode(reply), decoded.id == expectedID else {
        fatalError("a reply did not decode back with its id")
    }
    return 0
}
