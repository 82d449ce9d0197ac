import PreflightProtocol
import Testing

@testable import TargetDecisioning

@Suite struct AllocationTests {
    /// Reference values: `round(abs(mmh3.hash(device_id.encode("utf-16-le"))) % 10000 / 10000 * 100 * 100) / 100`.
    @Test(arguments: [
        ("someClientId", "125873", "338e3c1e51f7416a8e1ccba4f81acea0.28_0", 48.44),
        ("someClientId", "125871", "338e3c1e51f7416a8e1ccba4f81acea0.28_0", 87.67),
        ("someClientId", "125880", "338e3c1e51f7416a8e1ccba4f81acea0.28_0", 75.8),
        ("someClientId", "125873", "338e3c1e51f7416a8e1ccba4f81acea0", 25.49),
        ("targettesting", "1", "visitor", 63.96),
    ])
    func bucketsTheDeviceIdIntoAPercentage(_ client: String, _ activity: String, _ visitor: String, _ expected: Double)
    {
        #expect(Allocation.percentage(client: client, activityId: activity, visitorId: visitor) == expected)
    }

    @Test func prefersTheMarketingCloudIdThenTheTntIdWithoutItsLocationHintThenTheThirdPartyId() {
        let never: () -> String = {
            Issue.record("no id should be made")
            return ""
        }
        let all: JSONObject = ["marketingCloudVisitorId": "mcid", "tntId": "tnt.28_0", "thirdPartyId": "third"]
        #expect(Allocation.visitorIdentifier(all, makeIdentifier: never) == "mcid")
        #expect(
            Allocation.visitorIdentifier(["tntId": "tnt.28_0", "thirdPartyId": "third"], makeIdentifier: never) == "tnt"
        )
        #expect(Allocation.visitorIdentifier(["tntId": "tnt"], makeIdentifier: never) == "tnt")
        // The third-party id is used whole, dots and all.
        #expect(Allocation.visitorIdentifier(["thirdPartyId": "third.28_0"], makeIdentifier: never) == "third.28_0")
        // Empty ids fall through, as JavaScript's `||` does.
        let empty: JSONObject = ["marketingCloudVisitorId": "", "tntId": "", "thirdPartyId": "third"]
        #expect(Allocation.visitorIdentifier(empty, makeIdentifier: never) == "third")
    }

    @Test func makesAnIdForAVisitorWithoutOne() {
        #expect(Allocation.visitorIdentifier(nil) { "fresh" } == "fresh")
        let customerOnly: JSONObject = ["customerIds": [["id": "c1", "authenticatedState": "authenticated"]]]
        #expect(Allocation.visitorIdentifier(customerOnly) { "fresh" } == "fresh")
    }
}
