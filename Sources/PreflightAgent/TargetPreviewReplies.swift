import PreflightCore
import PreflightProtocol
import TargetOffers

/// `target.preview` (admin): Target's QA mode for every app, and how `status` shows it.
extension CommandDispatcher {
    /// Starts, ends or reads the preview: `{"active": true, "token": "Xk3p…", "expiresInMs", "expiresAtMs"}`
    /// or `{"active": false}`; a start or an end adds `cleared` (cached offers dropped), an end `ended`
    /// (whether a preview was on).
    func preview(_ command: TargetPreviewCommand) -> JSONValue {
        switch command {
        case .show:
            return previewResult()
        case .start(let token, let duration):
            let started = target.startPreview(token: token, duration: duration)
            var result = Self.previewJSON(started.preview)
            result["cleared"] = .integer(Int64(started.cleared))
            return .object(result)
        case .end:
            let cleared = target.endPreview()
            return ["active": false, "ended": .bool(cleared != nil), "cleared": .integer(Int64(cleared ?? 0))]
        }
    }

    /// The preview as `status` shows it under `target.preview`.
    func previewResult() -> JSONValue {
        .object(target.preview.map(Self.previewJSON) ?? ["active": false])
    }

    private static func previewJSON(_ preview: PreviewStatus) -> JSONObject {
        [
            "active": true,
            "token": .string(preview.maskedToken),
            "expiresInMs": .integer(preview.expiresIn.wholeMilliseconds),
            "expiresAtMs": .integer(preview.expiresAtMs),
        ]
    }
}
