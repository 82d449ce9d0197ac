import ArgumentParser
import Foundation
import PreflightClient
import PreflightProtocol
import Synchronization

struct Watch: AgentCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the agent's events as they happen, until Ctrl-C.",
        discussion: """
            One line per event: local time, topic, then the event's fields (with --json: the event's JSON, one \
            per line). Topics: \(EventTopic.allCases.map(\.topic).joined(separator: ", ")) (and more in later \
            agents). Events published before watch started are not shown.
            """
    )

    @ParentCommand var root: PreflightCtl
    @OptionGroup var local: GlobalOptions

    @Option(
        name: .customLong("topic"),
        help: ArgumentHelp("Show only topics starting with this (repeatable), e.g. offers. or upstream.error.")
    )
    var topics: [String] = []

    @Option(name: .long, help: ArgumentHelp("Stop after this many events.", valueName: "n"))
    var count: Int?

    @OptionGroup var events: EventsEndpointOptions

    func validate() throws {
        if let count, count < 1 { throw ValidationError("--count must be at least 1") }
    }

    func run() throws {
        let options = self.options
        let endpoint = try options.eventsEndpoint(override: events.eventsEndpoint)
        let subscriber: EventSubscriber
        do {
            subscriber = try EventSubscriber(endpoint: endpoint, topicPrefixes: topics)
        } catch {
            throw CtlFailure(error)
        }
        Interruption.install()
        if isatty(STDOUT_FILENO) == 1 {
            writeStandardError("Watching \(endpoint) (Ctrl-C to stop)\n")
        }
        // For watch, --timeout is how long to watch; without it, until Ctrl-C or --count.
        let deadline = options.timeout.map { ContinuousClock.now + .milliseconds(Int64($0 * 1000)) }
        var received = 0
        while !Interruption.happened {
            if let count, received >= count { break }
            // Short slices, so Ctrl-C is noticed promptly: zmq_poll resumes after a signal.
            var slice = Duration.milliseconds(100)
            if let deadline {
                let remaining = deadline - .now
                if remaining <= .zero { break }
                slice = min(slice, remaining)
            }
            let event: AgentEvent?
            do {
                event = try subscriber.next(timeout: slice)
            } catch {
                throw CtlFailure(error)
            }
            guard let event else { continue }
            received += 1
            print(options.json ? eventJSONLine(event) : eventLine(event, at: Date()))
            // nil flushes every stream; naming `stdout` is not concurrency-safe in Swift 6.
            fflush(nil)
        }
    }
}

/// "02:19:01.123 offers.cleared cleared=1 name=logo": the event's fields except `topic` and `uptimeMs`.
func eventLine(_ event: AgentEvent, at date: Date) -> String {
    var line = "\(clockTime(date)) \(event.topic)"
    guard let body = event.json else {
        return line + " raw=" + quotedIfNeeded(String(decoding: event.body, as: UTF8.self))
    }
    for (key, value) in body.objectValue ?? JSONObject() where key != "topic" && key != "uptimeMs" {
        let text: String
        switch value {
        case .string(let string): text = quotedIfNeeded(string)
        case .array, .object: text = JSONWriter.string(value)
        default: text = displayValue(value)
        }
        line += " \(key)=\(text)"
    }
    return line
}

/// The event's JSON body on one line as published; a body that is not a JSON object is wrapped.
func eventJSONLine(_ event: AgentEvent) -> String {
    if let body = event.json, body.objectValue != nil {
        return JSONWriter.string(body)
    }
    return JSONWriter.string([
        "topic": .string(event.topic), "raw": .string(String(decoding: event.body, as: UTF8.self)),
    ])
}

/// A value bare when it is one plain word, else JSON-quoted, so a line splits unambiguously on spaces.
private func quotedIfNeeded(_ text: String) -> String {
    let plain = !text.isEmpty && !text.contains { $0 == " " || $0 == "\"" || $0 == "=" || $0.isNewline }
    return plain ? text : JSONWriter.string(.string(text))
}

/// Remembers a SIGINT or SIGTERM, so `watch` ends its loop and exits 0 instead of being killed mid-line.
enum Interruption {
    private static let flag = Atomic<Bool>(false)

    static var happened: Bool { flag.load(ordering: .relaxed) }

    static func install() {
        // A lock-free atomic store is async-signal-safe.
        signal(SIGINT) { _ in Interruption.flag.store(true, ordering: .relaxed) }
        signal(SIGTERM) { _ in Interruption.flag.store(true, ordering: .relaxed) }
    }
}
