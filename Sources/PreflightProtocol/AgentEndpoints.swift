/// The sections of the agent's configuration file (`/etc/preflight/preflight.json`).
///
/// Declared here, below the agent, because apps and `preflightctl` read the same file to find the
/// agent's endpoints; the keys of each section are declared once, in the agent's configuration table.
public enum ConfigurationSection: String, CaseIterable, Sendable {
    case agent
    case target
    case pass

    /// Where a box keeps the configuration file, when no `--config` names another.
    public static let defaultFile = "/etc/preflight/preflight.json"
}

extension ConfigurationSection {
    /// `section.key`: how errors, warnings, messages and the docs name a key of this section.
    public func path(of key: String) -> String { "\(rawValue).\(key)" }
}

/// The keys of the `pass` section that modules which cannot see the agent's configuration table name
/// in their messages (Adobe Pass failures, `preflightctl`'s hints). The table declares these keys with
/// these names, so each is spelled once.
public enum PassConfigurationKey: String, CaseIterable, Sendable {
    /// The software statement from the TVE Dashboard, needed to register the box.
    case softwareStatement
    /// The service providers (requestor ids) this box serves.
    case requestors

    /// `pass.softwareStatement`, `pass.requestors`.
    public var path: String { ConfigurationSection.pass.path(of: rawValue) }
}

/// The agent's three ZeroMQ endpoints: their keys in the configuration file's `agent` section and the
/// addresses a box uses when the file does not set them. The agent, `PreflightClient` and `preflightctl`
/// all take them from here.
public enum AgentEndpoint: String, CaseIterable, Sendable {
    /// Where apps send commands (ROUTER).
    case app
    /// Where `preflightctl` sends admin commands (ROUTER).
    case admin
    /// Where events are published (PUB).
    case events

    /// The key in the `agent` section: `appEndpoint`, `adminEndpoint`, `eventsEndpoint`.
    public var configurationKey: String { rawValue + "Endpoint" }

    /// `agent.appEndpoint` and its siblings, as messages and help texts name the key.
    public var path: String { ConfigurationSection.agent.path(of: configurationKey) }

    /// `ipc:///run/preflight/app.sock` and its siblings.
    public var defaultAddress: String { "ipc:///run/preflight/\(rawValue).sock" }

    /// The endpoint a configuration file's JSON sets, or nil when it sets none (or an empty string).
    public func configured(in configuration: JSONValue) -> String? {
        guard let endpoint = configuration[ConfigurationSection.agent.rawValue]?[configurationKey]?.stringValue,
            !endpoint.isEmpty
        else { return nil }
        return endpoint
    }
}
