/// `target.preview` arguments (admin): Target's QA mode for every app of the box, started with the token
/// of a marketer's preview link, ended, or read.
///
/// `{"token": T, "minutes": N}` starts (or replaces) a preview for N minutes (default 30, 1 to 1440);
/// `{"token": T, "seconds": N}` is the same in seconds (1 to 86400), for scripts and tests that need one
/// shorter than a minute; `{"end": true}` ends it now; no arguments read it.
public enum TargetPreviewCommand: Sendable, Hashable {
    /// Reads the preview (no arguments).
    case show
    /// Starts a preview with `token` for `duration`, replacing any preview on.
    case start(token: String, duration: Duration)
    /// Ends the preview now.
    case end

    public static let defaultMinutes: Int64 = 30
    public static let minutes: ClosedRange<Int64> = 1...1440
    public static let seconds: ClosedRange<Int64> = 1...86_400
    /// Longest token, in characters (Target's preview tokens are a few hundred).
    public static let tokenLength = 2048

    /// Reads and validates the arguments.
    public static func decode(_ args: ArgumentReader) throws(ProtocolError) -> TargetPreviewCommand {
        let token = try args.optionalString("token")
        let minutes = try args.optionalInteger("minutes")
        let seconds = try args.optionalInteger("seconds")
        if try args.optionalBool("end") == true {
            for (key, given) in [("token", token != nil), ("minutes", minutes != nil), ("seconds", seconds != nil)]
            where given {
                throw .invalidArgument(args.fieldPath(key), "end ends the preview now: it takes no \(key)")
            }
            return .end
        }
        guard let token else {
            if minutes != nil || seconds != nil {
                throw .invalidArgument(args.fieldPath("token"), "token is required to start a preview")
            }
            return .show
        }
        guard (1...tokenLength).contains(token.scalarCount),
            !token.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F })
        else {
            throw .invalidArgument(
                args.fieldPath("token"),
                "token must be 1 to \(tokenLength) characters without spaces: the at_preview_token of the preview link"
            )
        }
        switch (minutes, seconds) {
        case (.some, .some):
            throw .invalidArgument(args.fieldPath("seconds"), "give minutes or seconds, not both")
        case (nil, let seconds?):
            guard Self.seconds.contains(seconds) else {
                throw .invalidArgument(
                    args.fieldPath("seconds"),
                    "seconds must be \(Self.seconds.lowerBound) to \(Self.seconds.upperBound)"
                )
            }
            return .start(token: token, duration: .seconds(seconds))
        case (let minutes, nil):
            let minutes = minutes ?? defaultMinutes
            guard Self.minutes.contains(minutes) else {
                throw .invalidArgument(
                    args.fieldPath("minutes"),
                    "minutes must be \(Self.minutes.lowerBound) to \(Self.minutes.upperBound) (a day)"
                )
            }
            return .start(token: token, duration: .seconds(minutes * 60))
        }
    }
}
