import Testing

@testable import PreflightProtocol

private func arguments(_ json: String) throws -> ArgumentReader {
    guard case .object(let object) = try JSONReader.read(Array(json.utf8)) else {
        throw ProtocolError.invalidArgument("", "not an object")
    }
    return ArgumentReader(object)
}

/// The field a `target.preview` refusal names, or nil when the arguments were read.
private func rejectedPreviewField(_ json: String) throws -> String? {
    do {
        _ = try TargetPreviewCommand.decode(arguments(json))
        return nil
    } catch let error as ProtocolError {
        #expect(error.code == .invalidArgument)
        return error.field ?? "<no field>"
    }
}

@Suite struct TargetPreviewArgumentTests {
    @Test func readsAStartAnEndAndARead() throws {
        #expect(try TargetPreviewCommand.decode(arguments("{}")) == .show)
        #expect(
            try TargetPreviewCommand.decode(arguments(#"{"token":"tok"}"#))
                == .start(token: "tok", duration: .seconds(1800))
        )
        #expect(
            try TargetPreviewCommand.decode(arguments(#"{"token":"tok","minutes":1440}"#))
                == .start(token: "tok", duration: .seconds(86_400))
        )
        #expect(
            try TargetPreviewCommand.decode(arguments(#"{"token":"tok","seconds":2}"#))
                == .start(token: "tok", duration: .seconds(2))
        )
        #expect(try TargetPreviewCommand.decode(arguments(#"{"end":true}"#)) == .end)
        #expect(try TargetPreviewCommand.decode(arguments(#"{"end":false}"#)) == .show)
    }

    @Test func refusesWhatItCannotCarryOutNamingTheField() throws {
        #expect(try rejectedPreviewField(#"{"token":"tok","minutes":0}"#) == "minutes")
        #expect(try rejectedPreviewField(#"{"token":"tok","minutes":1441}"#) == "minutes")
        #expect(try rejectedPreviewField(#"{"token":"tok","minutes":1.5}"#) == "minutes")
        #expect(try rejectedPreviewField(#"{"token":"tok","seconds":86401}"#) == "seconds")
        #expect(try rejectedPreviewField(#"{"token":"tok","minutes":5,"seconds":5}"#) == "seconds")
        #expect(try rejectedPreviewField(#"{"minutes":5}"#) == "token")
        #expect(try rejectedPreviewField(#"{"token":""}"#) == "token")
        #expect(try rejectedPreviewField(#"{"token":"two words"}"#) == "token")
        #expect(try rejectedPreviewField(#"{"token":7}"#) == "token")
        #expect(try rejectedPreviewField(#"{"end":true,"token":"tok"}"#) == "token")
        #expect(try rejectedPreviewField(#"{"end":"yes"}"#) == "end")
        let longest = String(repeating: "t", count: TargetPreviewCommand.tokenLength)
        #expect(try rejectedPreviewField(#"{"token":"\#(longest)"}"#) == nil)
        #expect(try rejectedPreviewField(#"{"token":"\#(longest)t"}"#) == "token")
    }
}

@Suite struct TracedLoadArgumentTests {
    private let load = #""requests":[{"name":"logo","defaultContent":"d"}]"#

    @Test func aLoadWithTraceIsATracedLoad() throws {
        let read = try AppCommand.decode(
            .loadRequests,
            arguments(#"{\#(load),"trace":{"authorizationToken":"tok"}}"#),
            limits: CommandLimits()
        )
        #expect(
            read
                == .tracedLoad(
                    TracedLoadCommand(
                        load: LoadRequestsCommand(requests: [LoadRequest(name: "logo", defaultContent: "d")]),
                        trace: TargetTrace(authorizationToken: "tok")
                    )
                )
        )
        #expect(read?.command == .loadRequests)
        let plain = try AppCommand.decode(
            .loadRequests,
            arguments(#"{\#(load),"trace":null}"#),
            limits: CommandLimits()
        )
        guard case .loadRequests = plain else {
            Issue.record("a null trace is no trace")
            return
        }
    }

    @Test func aBadTraceIsRefusedNamingTheField() throws {
        for (trace, field) in [
            (#"{}"#, "trace.authorizationToken"), (#"{"authorizationToken":""}"#, "trace.authorizationToken"),
            (#"{"authorizationToken":1}"#, "trace.authorizationToken"), (#""tok""#, "trace"),
            (#"{"authorizationToken":"t","usage":{}}"#, "trace.usage"),
        ] {
            do {
                _ = try AppCommand.decode(
                    .loadRequests,
                    arguments(#"{\#(load),"trace":\#(trace)}"#),
                    limits: CommandLimits()
                )
                Issue.record("accepted trace \(trace)")
            } catch let error as ProtocolError {
                #expect(error.field == field, "trace \(trace)")
            }
        }
    }

    /// A traced load is never on the cached path: the one-pass reader leaves it to the general one.
    @Test func theOnePassReaderLeavesATracedLoadToTheGeneralPath() {
        let body = #"{"v":1,"id":"1","cmd":"loadRequests","args":{\#(load),"trace":{"authorizationToken":"t"}}}"#
        #expect(FastRequest.read(Array(body.utf8), limits: CommandLimits(), maxBodyBytes: 1 << 20) == nil)
    }
}
