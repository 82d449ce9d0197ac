import Logging
import PreflightCore
import PreflightProtocol
import StateFiles
import TargetDecisioning
import UpstreamHTTP

extension TargetService {
    // MARK: the rules artifact (on-device decisioning)

    /// The artifact the box decides from, when one is held (nil until the first download, or the last
    /// one read from the state directory).
    public var artifact: DecisioningArtifact? { artifactBox.withLock { $0.artifact } }

    /// What `status` shows of it.
    public var artifactStatus: ArtifactStatus { artifactBox.withLock { $0.status } }

    /// The largest artifact read: Target's artifacts grow with the account's on-device activities (Adobe's
    /// sample with 152 rules is 750 KB), past the 4 MiB cap of API answers; one many times larger than this
    /// would not fit a box's memory once read.
    public static let artifactMaxBytes = 32 << 20

    /// Asks the poller to fetch at its next turn (a reload: a technician's way to fetch now).
    public func requestArtifactFetch() {
        artifactFetchRequested.store(true, ordering: .relaxed)
    }

    /// The poller: unless decisioning is `server-side`, reads the artifact kept in the state directory
    /// (once), then fetches at start, every `artifactPollingInterval` and when a reload asks, backing off
    /// after failures. While the box is not opted in to Target, a fetch due is not made and stays due (opting
    /// in asks for one at once). Runs until cancelled.
    public func runArtifactPolling() async {
        var generator = SystemRandomNumberGenerator()
        var readDisk = false
        // Due at once: the first turn that wants the artifact fetches it.
        var due: MonotonicInstant? = clock.now()
        while !Task.isCancelled {
            let configuration = self.configuration
            if configuration.decisioningMethod != .serverSide {
                if !readDisk {
                    readDisk = true
                    loadKeptArtifact(configuration)
                }
                if artifactFetchRequested.exchange(false, ordering: .relaxed) {
                    due = clock.now()
                    artifactBox.withLock { $0.status.failuresInARow = 0 }
                }
                if let next = due, clock.now() >= next, let result = await fetchArtifact(configuration) {
                    let failures = artifactBox.withLock { $0.status.failuresInARow }
                    due = ArtifactPolling.delay(
                        after: result,
                        failuresInARow: failures,
                        interval: configuration.artifactPollingInterval,
                        using: &generator
                    ).map { clock.now() + $0 }
                }
            } else if readDisk {
                // Back to server-side: the rules are let go (an artifact read is several times its size in
                // memory); switching back reads the kept copy again, then fetches.
                readDisk = false
                due = clock.now()
                artifactBox.withLock { $0 = HeldArtifact() }
                decisionInputsChanged()
            }
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// One fetch: `If-None-Match` with the ETag held (when it came from the same address); a 304 keeps
    /// the artifact, a 200 replaces it if the engine reads it, and is kept in the state directory.
    /// Nothing is sent unless the box is opted in to Target (`TargetPrivacy.allowsSending`): nil then, the
    /// artifact held is kept, and `status` says why (`skipped`).
    @discardableResult
    public func fetchArtifact(_ configuration: TargetConfiguration? = nil) async -> ArtifactFetchResult? {
        let configuration = configuration ?? self.configuration
        let url = configuration.artifactURL
        let privacy = self.privacy
        guard privacy.allowsSending else {
            let reason = privacy.notSentReason
            if Self.noteSkipped(reason, in: artifactBox, at: \.status.skipped) {
                logger.info(
                    "rules artifact not fetched: nothing is sent to Target until it is optedIn; the rules held are kept",
                    metadata: [
                        "url": "\(url)", "reason": "\(reason)", "versionHeld": "\(artifactStatus.version ?? "none")",
                    ]
                )
            }
            return nil
        }
        let (holding, etag) = artifactBox.withLock { box in
            (box.artifact != nil, box.status.url == url ? box.status.etag : nil)
        }
        var headers: [(name: String, value: String)] = [("User-Agent", configuration.device.userAgent)]
        if holding, let etag { headers.append(("If-None-Match", etag)) }
        let request = HTTPRequest(
            method: "GET",
            url: url,
            headers: headers,
            timeout: .seconds(30),
            maxResponseBytes: Self.artifactMaxBytes
        )
        let started = time.epochMilliseconds()
        let answer: ArtifactPolling.Answer
        var body: [UInt8] = []
        do {
            let response = try await artifactTransport.send(request)
            body = response.body
            answer = ArtifactPolling.interpret(
                response,
                format: configuration.artifactFormat,
                organizationId: configuration.organizationId,
                holding: holding && etag != nil
            )
        } catch {
            answer = .failed(error.description)
        }
        let now = time.epochMilliseconds()
        switch answer {
        case .notModified:
            record(.notModified, at: started, error: nil)
            logger.debug("rules artifact not modified", metadata: ["url": "\(url)"])
            return .notModified
        case .accepted(let artifact, let newETag):
            // Kept first: whoever sees `updated` in `status` finds the files written.
            keepArtifact(body, format: configuration.artifactFormat, url: url, etag: newETag, downloadedAtMs: now)
            artifactBox.withLock {
                $0.hold(artifact, etag: newETag, source: .network, downloadedAtMs: now, url: url)
            }
            decisionInputsChanged()
            record(.updated, at: started, error: nil)
            logger.notice(
                "rules artifact updated",
                metadata: [
                    "url": "\(url)", "version": "\(artifact.version)", "rules": "\(artifact.rulesCount)",
                    "etag": "\(newETag ?? "none")",
                ]
            )
            publish(
                .artifactUpdated,
                [
                    "version": .string(artifact.version), "rules": .integer(Int64(artifact.rulesCount)),
                    "etag": newETag.map { .string($0) } ?? .null,
                ]
            )
            return .updated
        case .refused(let reason):
            record(.refused, at: started, error: reason)
            let held = artifactStatus.version
            logger.error(
                "rules artifact refused; the rules held are kept",
                metadata: ["url": "\(url)", "reason": "\(reason)", "versionHeld": "\(held ?? "none")"]
            )
            return .refused
        case .failed(let reason):
            let result: ArtifactFetchResult = reason.hasPrefix("HTTP ") ? .httpError : .networkError
            record(result, at: started, error: reason)
            logger.warning(
                "rules artifact not fetched; the rules held are kept",
                metadata: ["url": "\(url)", "error": "\(reason)", "versionHeld": "\(artifactStatus.version ?? "none")"]
            )
            return result
        }
    }

    private func record(_ result: ArtifactFetchResult, at: Int64, error: String?) {
        artifactBox.withLock { box in
            box.status.lastFetchAtMs = at
            box.status.lastFetchResult = result
            box.status.lastFetchError = error
            box.status.failuresInARow = result.isFailure ? box.status.failuresInARow + 1 : 0
            box.status.skipped = nil
        }
    }

    // MARK: kept in the state directory

    private var artifactMetaFile: StateFile? {
        stateDirectory.map { StateFile(path: "\($0)/target-artifact.meta.json", logger: logger) }
    }

    private func artifactBytesPath(_ format: ArtifactFormat) -> String? {
        stateDirectory.map { "\($0)/target-artifact.\(format.rawValue)" }
    }

    /// The bytes as downloaded (`target-artifact.json` or `.bin`), then their ETag, address and time
    /// (`target-artifact.meta.json`), each replaced atomically.
    private func keepArtifact(
        _ bytes: [UInt8],
        format: ArtifactFormat,
        url: String,
        etag: String?,
        downloadedAtMs: Int64
    ) {
        guard let path = artifactBytesPath(format), let meta = artifactMetaFile else { return }
        do {
            try StateFile.atomicWrite(bytes, to: path, mode: 0o600)
        } catch {
            logger.error("cannot keep the rules artifact", metadata: ["file": "\(path)", "error": "\(error)"])
            return
        }
        meta.write([
            "format": .string(format.rawValue), "url": .string(url), "etag": etag.map { .string($0) } ?? .null,
            "downloadedAtMs": .integer(downloadedAtMs),
        ])
    }

    /// Reads the artifact kept by an earlier run, so that a box that starts offline decides from the
    /// last rules it had.
    func loadKeptArtifact(_ configuration: TargetConfiguration) {
        guard let meta = artifactMetaFile?.read(),
            let format = meta["format"]?.stringValue.flatMap(ArtifactFormat.init(rawValue:)),
            let path = artifactBytesPath(format)
        else { return }
        let bytes: [UInt8]
        do {
            guard let read = try FileSystem.readFile(path, limit: 64 << 20) else { return }
            bytes = read
        } catch {
            logger.error("cannot read the kept rules artifact", metadata: ["file": "\(path)", "error": "\(error)"])
            return
        }
        do throws(ArtifactError) {
            let artifact =
                switch format {
                case .json: try DecisioningArtifact(json: bytes)
                case .bin: try DecisioningArtifact(obfuscated: bytes, organizationId: configuration.organizationId)
                }
            let etag = meta["etag"]?.stringValue
            let url = meta["url"]?.stringValue
            let downloadedAtMs = meta["downloadedAtMs"]?.doubleValue.map { Int64($0) }
            // An artifact already held (one loaded by hand before the poller's first turn) is newer than the
            // kept copy: it stays, and the decisions made with it stay valid.
            let held = artifactBox.withLock { box -> Bool in
                guard box.artifact == nil else { return false }
                box.hold(artifact, etag: etag, source: .disk, downloadedAtMs: downloadedAtMs, url: url)
                return true
            }
            guard held else {
                logger.debug("the kept rules artifact is not used: one is already held", metadata: ["file": "\(path)"])
                return
            }
            decisionInputsChanged()
            logger.notice(
                "rules artifact read from the state directory",
                metadata: ["file": "\(path)", "version": "\(artifact.version)", "rules": "\(artifact.rulesCount)"]
            )
        } catch {
            logger.error(
                "the kept rules artifact cannot be read; waiting for a download",
                metadata: ["file": "\(path)", "error": "\(error)"]
            )
        }
    }
}
