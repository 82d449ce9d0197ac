// The Target SDK's prefetch sample on preflightd: prefetch the mboxes "logo" and "buttonColor", then load them.
// Its one argument is the agent's configuration file (default /etc/preflight/preflight.json).
import PreflightClient

let configurationFile = CommandLine.arguments.dropFirst().first ?? PreflightClient.defaultConfigurationFile
let client = try PreflightClient(endpoint: PreflightClient.configuredAppEndpoint(configurationFile: configurationFile))

// [ADBMobile targetPrefetchObjectWithName:mboxParameters:], then its productParameters and orderParameters.
var prefetch1 = TargetPrefetchObject(name: "logo", mboxParameters: ["status": "platinum"])
prefetch1.productParameters = ["id": "24D3412", "categoryId": "Books"]
prefetch1.orderParameters = ["id": "ADCKKIM", "total": "344.30", "purchasedProductIds": "34, 125, 99"]

var prefetch2 = TargetPrefetchObject(name: "buttonColor", mboxParameters: ["userType": "Paid"])
prefetch2.productParameters = ["id": "764334", "categoryId": "Online"]
prefetch2.orderParameters = ["id": "4t4uxksa", "total": "54.90", "purchasedProductIds": "id1, id2"]

let profileParameters = ["age": "20-32"]

// [ADBMobile targetPrefetchContent:withProfileParameters:callback:]. The async form returns the callback's Bool.
let isSuccess = await client.targetPrefetchContent([prefetch1, prefetch2], profileParameters: profileParameters)
print(isSuccess ? "prefetch succeeded" : "prefetch failed")

// [ADBMobile targetRequestObjectWithName:defaultContent:mboxParameters:callback:]
let request1 = TargetRequestObject(
    name: "logo",
    defaultContent: "BlueWhale",
    mboxParameters: ["status": "platinum"],
    callback: { content in print("logo: \(content ?? "")") }
)
let request2 = TargetRequestObject(
    name: "buttonColor",
    defaultContent: "red",
    callback: { content in print("buttonColor: \(content ?? "")") }
)

// [ADBMobile targetLoadRequests:withProfileParameters:]. The async form returns once every callback has run;
// naming the result's type makes top-level code pick it (else Swift takes the SDK's fire-and-forget form).
let requestArray = [request1, request2]
let contents: [TargetContent] = await client.targetLoadRequests(requestArray, profileParameters: profileParameters)
for content in contents {
    print("\(content.name) came from \(content.source)")
}
