#if canImport(Glibc)
import Glibc
#endif

/// Who may use the admin endpoint beyond what the socket file's mode allows (`agent.allowedAdminGroups`).
///
/// libzmq runs a ZAP handshake (RFC 27) for every new connection to a socket with a ZAP domain, and for
/// ipc peers it reports the address as `…:UID:GID:PID` from `SO_PEERCRED`: the kernel's word, not the
/// peer's. The agent answers each handshake itself (on its I/O thread) with a user id of `admin` for an
/// allowed peer and `refused` for any other; every message then carries that verdict, and admin
/// requests from a refused connection get `not_permitted`. The connection is accepted either way, so
/// the refusal is an answer the technician can read rather than a silent timeout.
struct AdminPeerCheck: Sendable {
    /// The ZAP domain set on the admin socket.
    static let domain = "preflight-admin"
    static let allowedUserId = "admin"

    let allowedGroups: [String]

    /// The peer's uid and gid from a ZAP address; nil when the address has no credentials (not ipc).
    static func credentials(fromAddress address: String) -> (uid: uid_t, gid: gid_t)? {
        let parts = address.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count >= 4, let uid = uid_t(parts[parts.count - 3]), let gid = gid_t(parts[parts.count - 2]) else {
            return nil
        }
        return (uid, gid)
    }

    /// root and the agent's own user may always administer; anyone else needs one of the groups,
    /// as primary group (from the kernel) or supplementary group (from the group database).
    func allows(uid: uid_t, gid: gid_t) -> Bool {
        if uid == 0 || uid == getuid() { return true }
        let allowedIDs = Set(allowedGroups.compactMap { name in getgrnam(name).map { $0.pointee.gr_gid } })
        if allowedIDs.contains(gid) { return true }
        return Self.groups(of: uid, primary: gid).contains { allowedIDs.contains($0) }
    }

    private static func groups(of uid: uid_t, primary: gid_t) -> [gid_t] {
        guard let entry = getpwuid(uid), let name = entry.pointee.pw_name else { return [] }
        var count: CInt = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        if getgrouplist(name, primary, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count))
            guard getgrouplist(name, primary, &groups, &count) >= 0 else { return [] }
        }
        return Array(groups.prefix(Int(count)))
    }

    /// The reply to one ZAP request (RFC 27: version, request id, domain, address, routing id,
    /// mechanism, credentials...): status 200 with the verdict as user id.
    func reply(to request: [[UInt8]]) -> [[UInt8]] {
        guard request.count >= 6, request[0] == Array("1.0".utf8) else {
            return [
                Array("1.0".utf8), request.count > 1 ? request[1] : [], Array("400".utf8),
                Array("bad ZAP request".utf8), [], [],
            ]
        }
        let address = String(decoding: request[3], as: UTF8.self)
        let verdict: String
        if let peer = Self.credentials(fromAddress: address), allows(uid: peer.uid, gid: peer.gid) {
            verdict = Self.allowedUserId
        } else {
            verdict = "refused"
        }
        return [Array("1.0".utf8), request[1], Array("200".utf8), Array("OK".utf8), Array(verdict.utf8), []]
    }
}
