import PreflightCore
import TargetDecisioning
import UpstreamHTTP

/// What one fetch of the rules artifact came to (`status`'s `target.artifact.lastFetchResult`).
public enum ArtifactFetchResult: String, Sendable, Equatable {
    /// A new artifact was read and now decides.
    case updated
    /// 304: the artifact held is still Target's.
    case notModified
    /// Target sent an artifact the engine cannot read (another major version, not JSON): the one held stays.
    case refused
    /// Target answered with another status.
    case httpError
    /// No answer (refused connection, timeout, unresolvable host).
    case networkError

    /// Whether the next attempt backs off: the asset host did not give an answer worth waiting the
    /// whole interval for.
    public var isFailure: Bool { self == .httpError || self == .networkError }
}

/// Where the artifact held came from.
public enum ArtifactSource: String, Sendable, Equatable {
    /// Downloaded by this run.
    case network
    /// Read from the state directory at start (the last rules the box had).
    case disk
}

/// What `status` shows of the artifact (`target.artifact`).
public struct ArtifactStatus: Sendable, Equatable {
    public var version: String?
    public var generatedAt: String?
    public var rules: Int?
    /// The ETag of the artifact held, sent as `If-None-Match`.
    public var etag: String?
    public var source: ArtifactSource?
    /// When the artifact held was downloaded (epoch ms; kept across restarts).
    public var downloadedAtMs: Int64?
    /// The URL the artifact held came from.
    public var url: String?
    public var lastFetchAtMs: Int64?
    public var lastFetchResult: ArtifactFetchResult?
    /// Why the last fetch failed or was refused.
    public var lastFetchError: String?
    public var failuresInARow = 0
    /// Why the fetch last due was not made (`TargetPrivacy.notSentReason`: the box is not opted in to Target);
    /// nil once a fetch is made.
    public var skipped: String?

    public init() {}
}

/// The artifact held, and what is known about it, behind one lock.
struct HeldArtifact: Sendable {
    /// The engine of the artifact held: built once per artifact (its conditions compiled, its context cache).
    private(set) var engine: DecisioningEngine?
    var artifact: DecisioningArtifact? {
        get { engine?.artifact }
        set { engine = newValue.map(DecisioningEngine.init(artifact:)) }
    }
    var status = ArtifactStatus()

    /// Decides from `artifact` from now on, and says where it came from in `status` (the fetch's own
    /// outcome is `record`ed apart).
    mutating func hold(
        _ artifact: DecisioningArtifact,
        etag: String?,
        source: ArtifactSource,
        downloadedAtMs: Int64?,
        url: String?
    ) {
        self.artifact = artifact
        status.version = artifact.version
        status.generatedAt = artifact.generatedAt
        status.rules = artifact.rulesCount
        status.etag = etag
        status.source = source
        status.downloadedAtMs = downloadedAtMs
        status.url = url
    }
}

/// The pure part of keeping the artifact: what a response means, and when to ask again.
public enum ArtifactPolling {
    /// What an answer of the asset host means.
    public enum Answer: Sendable {
        case notModified
        case accepted(DecisioningArtifact, etag: String?)
        case refused(String)
        case failed(String)
    }

    /// Retries after failures: 10 s, doubling to at most 320 s, never past the polling interval.
    public static let retry = Backoff(base: .seconds(10), doublings: 5, cap: .seconds(300), jitter: .equal)

    /// Reads an answer: 304 keeps the artifact held (a 304 with none held is a failure), 200 is parsed
    /// in `format`, anything else fails.
    public static func interpret(
        _ response: HTTPResponse,
        format: ArtifactFormat,
        organizationId: String,
        holding: Bool
    ) -> Answer {
        switch response.status {
        case 304:
            return holding ? .notModified : .failed("HTTP 304 while no artifact is held")
        case 200:
            do throws(ArtifactError) {
                let artifact =
                    switch format {
                    case .json: try DecisioningArtifact(json: response.body)
                    case .bin: try DecisioningArtifact(obfuscated: response.body, organizationId: organizationId)
                    }
                return .accepted(artifact, etag: response.header("etag"))
            } catch {
                return .refused(error.message)
            }
        default:
            return .failed("HTTP \(response.status)")
        }
    }

    /// How long after a fetch the next one is due: the interval (nil: not until asked, by a reload),
    /// or after failures the back-off, at most the interval.
    public static func delay<Generator: RandomNumberGenerator>(
        after result: ArtifactFetchResult,
        failuresInARow: Int,
        interval: Duration?,
        using generator: inout Generator
    ) -> Duration? {
        delay(failed: result.isFailure, failuresInARow: failuresInARow, interval: interval, using: &generator)
    }

    /// The same, for any poller on the artifact's cadence (the geo lookup): the interval after a success,
    /// the back-off (at most the interval) after failures.
    public static func delay<Generator: RandomNumberGenerator>(
        failed: Bool,
        failuresInARow: Int,
        interval: Duration?,
        using generator: inout Generator
    ) -> Duration? {
        guard failed else { return interval }
        let backoff = retry.delay(attempt: failuresInARow, using: &generator)
        return interval.map { min($0, backoff) } ?? backoff
    }
}
