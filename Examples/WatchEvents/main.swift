// Prints the agent's offers.* events as they happen, one line each: the topic, then the JSON body.
// Its one argument is the agent's configuration file (default /etc/preflight/preflight.json).
import PreflightClient

let configurationFile = CommandLine.arguments.dropFirst().first ?? PreflightClient.defaultConfigurationFile
let endpoint = PreflightClient.configuredEventsEndpoint(configurationFile: configurationFile)

// A blocking SUB socket: one thread reads it. It throws when the agent is not running (no socket file).
let subscriber = try EventSubscriber(endpoint: endpoint, topicPrefixes: ["offers."])
while let event = try subscriber.next(timeout: nil) {
    print(event.topic, String(decoding: event.body, as: UTF8.self))
}
