import PreflightProtocol
import Testing

@testable import PreflightAgent

private func parse(_ text: String) throws(ConfigurationError) -> LoadedConfiguration {
    try AgentConfiguration.parse(Array(text.utf8))
}

private func failingKey(_ text: String) -> String? {
    do {
        _ = try parse(text)
        return nil
    } catch {
        return error.key
    }
}

@Suite struct ConfigurationTests {
    @Test func readsTheDocumentedKeys() throws {
        let loaded = try parse(
            #"""
            {"agent": {"appEndpoint": "ipc:///tmp/a.sock", "adminEndpoint": "ipc:///tmp/b.sock",
                       "eventsEndpoint": "ipc:///tmp/c.sock", "stateDirectory": "/tmp/state"},
             "target": {"clientCode": "acme", "serverURL": "http://127.0.0.1:8088/", "environmentId": 7,
                        "propertyToken": "tok", "timeout": 5},
             "pass": {"serverURL": "http://127.0.0.1:8088", "softwareStatement": "eyJ", "requestors": ["acme-requestor"]}}
            """#
        )
        let configuration = loaded.configuration
        #expect(loaded.warnings.isEmpty)
        #expect(configuration.agent.appEndpoint == "ipc:///tmp/a.sock")
        #expect(configuration.agent.stateDirectory == "/tmp/state")
        #expect(configuration.target.clientCode == "acme")
        #expect(configuration.target.effectiveServerURL == "http://127.0.0.1:8088")
        #expect(configuration.target.environmentId == 7)
        #expect(configuration.target.timeout == 5)
        #expect(configuration.pass.requestors == ["acme-requestor"])
    }

    @Test func absentServerURLsMeanAdobeHosts() throws {
        let configuration = try parse(#"{"target": {"clientCode": "acme"}}"#).configuration
        #expect(configuration.target.effectiveServerURL == "https://acme.tt.omtrdc.net")
        #expect(configuration.pass.effectiveServerURL == "https://sp.auth.adobe.com")
        #expect(configuration.agent.appEndpoint == "ipc:///run/preflight/app.sock")
    }

    @Test func unknownKeysAreWarningsNotErrors() throws {
        let loaded = try parse(#"{"target": {"clientCode": "acme", "colour": 1}, "extra": true}"#)
        #expect(loaded.warnings == ["unknown key target.colour (ignored)", "unknown key extra (ignored)"])
    }

    @Test func wrongTypesAndValuesNameTheKey() {
        #expect(failingKey(#"{"target": {"clientCode": "a", "timeout": "5"}}"#) == "target.timeout")
        #expect(failingKey(#"{"target": {"clientCode": "a", "timeout": 0}}"#) == "target.timeout")
        #expect(failingKey(#"{"target": {"clientCode": 5}}"#) == "target.clientCode")
        #expect(failingKey(#"{"target": {"clientCode": "a", "environmentId": -1}}"#) == "target.environmentId")
        #expect(failingKey(#"{"target": {"clientCode": "a", "serverURL": "ftp://x"}}"#) == "target.serverURL")
        #expect(
            failingKey(#"{"target": {"clientCode": "a"}, "agent": {"appEndpoint": "/run/x.sock"}}"#)
                == "agent.appEndpoint"
        )
        #expect(failingKey(#"{"target": {"clientCode": "a"}, "agent": {"logLevel": "loud"}}"#) == "agent.logLevel")
        #expect(
            failingKey(#"{"target": {"clientCode": "a"}, "pass": {"requestors": ["ok", ""]}}"#)
                == "pass.requestors[1]"
        )
        #expect(failingKey(#"{"target": []}"#) == "target")
        #expect(failingKey(#"{"target": {}}"#) == "target.clientCode")
        #expect(failingKey("[]") == "")
        #expect(failingKey("{") == "")
    }

    @Test func endpointsMustDiffer() {
        #expect(
            failingKey(
                #"{"target": {"clientCode": "a"}, "agent": {"appEndpoint": "ipc:///x", "adminEndpoint": "ipc:///x"}}"#
            )
                == "agent"
        )
    }
}

@Suite struct ArtifactConfigurationTests {
    @Test func theArtifactAddressFollowsTheAccountEnvironmentPropertyAndFormat() throws {
        let loaded = try parse(
            #"""
            {"target": {"clientCode": "acme", "propertyToken": "p-1", "environment": "staging",
                        "decisioningMethod": "hybrid", "artifactFormat": "bin", "organizationId": "ORG@AdobeOrg"}}
            """#
        )
        let service = loaded.configuration.target.serviceConfiguration
        #expect(service.artifactURL == "https://assets.adobetarget.com/acme/staging/v1/p-1/rules.bin")
        #expect(service.decisioningMethod == .hybrid && service.artifactFormat == .bin)
        #expect(service.artifactPollingInterval == .seconds(300) && service.organizationId == "ORG@AdobeOrg")
        let never = try parse(#"{"target": {"clientCode": "acme", "artifactPollingInterval": 0}}"#)
        #expect(never.configuration.target.serviceConfiguration.artifactPollingInterval == nil)
    }

    @Test func refusesAnIntervalUnderFiveMinutesAndBinWithoutItsKey() {
        #expect(
            failingKey(#"{"target": {"clientCode": "acme", "artifactPollingInterval": 60}}"#)
                == "target.artifactPollingInterval"
        )
        #expect(
            failingKey(#"{"target": {"clientCode": "acme", "decisioningMethod": "local"}}"#)
                == "target.decisioningMethod"
        )
        #expect(
            failingKey(
                #"{"target": {"clientCode": "acme", "decisioningMethod": "on-device", "artifactFormat": "bin"}}"#
            )
                == "target.organizationId"
        )
        // Server-side decisioning fetches nothing, so it needs no key.
        #expect(failingKey(#"{"target": {"clientCode": "acme", "artifactFormat": "bin"}}"#) == nil)
    }
}
