import Logging
import StateFiles
import ZeroMQ

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The IPC server's sockets: made and bound with their options, their files' folder, mode and group,
/// and the files removed at stop. Everything here runs on the I/O thread.
extension IPCServer {
    /// The sockets, created, used and closed on the I/O thread only.
    struct Sockets {
        let context: ZeroMQContext
        let app: ZeroMQSocket
        let admin: ZeroMQSocket
        let events: ZeroMQSocket
        /// The ZAP handler's socket, when admin peers are checked.
        let zap: ZeroMQSocket?

        func socket(for role: EndpointRole) -> ZeroMQSocket {
            role == .app ? app : admin
        }

        /// Closes every socket, giving libzmq's I/O thread time (`closingLingerMilliseconds`) to hand the
        /// last replies and `agent.stopping` to their peers: the context's termination waits for that.
        /// 200 ms was not enough on a loaded machine (CI lost `agent.stopping` once); a peer that reads
        /// makes the wait far shorter, and one that does not read costs at most this at stop.
        func closeAll() {
            for socket in [app, admin, events] + (zap.map { [$0] } ?? []) {
                try? socket.setOption(.linger(milliseconds: IPCServer.closingLingerMilliseconds))
                socket.close()
            }
        }
    }

    /// How long closing sockets may wait for unsent messages to leave (zmq `ZMQ_LINGER`).
    static let closingLingerMilliseconds: Int32 = 2000

    func bindSockets() throws(AgentError) -> Sockets {
        let context: ZeroMQContext
        let app: ZeroMQSocket
        let admin: ZeroMQSocket
        let events: ZeroMQSocket
        var zap: ZeroMQSocket?
        do {
            context = try ZeroMQContext(ioThreads: 1)
            app = try context.makeSocket(.router)
            admin = try context.makeSocket(.router)
            // An XPUB, so that the I/O thread learns what is subscribed to (`EventSubscriptions`); to a SUB it is
            // a PUB.
            events = try context.makeSocket(.xpub)
            // Bodies somewhat over the limit still get a payload_too_large reply; beyond twice the limit
            // libzmq drops the connection instead of buffering an arbitrarily large message.
            let maxMessage = Int64(maxBodyBytes) * 2 + 4096
            for router in [app, admin] {
                try router.setOption(.routerMandatory(true))
                try router.setOption(.maxMessageSize(maxMessage))
                try router.setOption(.sendHighWaterMark(1000))
                try router.setOption(.receiveHighWaterMark(1000))
                try router.setOption(.linger(milliseconds: 0))
            }
            try events.setOption(.sendHighWaterMark(1000))
            try events.setOption(.linger(milliseconds: 0))
            if !endpoints.allowedAdminGroups.isEmpty {
                // The handler must be bound before any admin connection can start its handshake.
                let handler = try context.makeSocket(.rep)
                try handler.setOption(.linger(milliseconds: 0))
                try handler.bind("inproc://zeromq.zap.01")
                zap = handler
                try admin.setOption(.zapDomain(AdminPeerCheck.domain))
            }
        } catch {
            throw AgentError.bindFailed(endpoints.app, reason: "\(error)")
        }
        var bound: [ZeroMQSocket] = []
        let plan = [
            (app, endpoints.app, endpoints.appGroup), (admin, endpoints.admin, endpoints.adminGroup),
            (events, endpoints.events, endpoints.appGroup),
        ]
        for (socket, endpoint, group) in plan {
            do {
                try prepareFolder(for: endpoint)
                try socket.bind(endpoint)
                bound.append(socket)
                applyPermissions(endpoint, group: group)
            } catch {
                app.close()
                admin.close()
                events.close()
                zap?.close()
                // Only the files of endpoints this process bound are ours to remove.
                for (other, otherEndpoint) in [(app, endpoints.app), (admin, endpoints.admin)]
                where bound.contains(where: { $0 === other }) {
                    Self.removeSocketFile(of: otherEndpoint)
                }
                if let error = error as? ZeroMQError, error == .addressInUse {
                    throw AgentError.endpointInUse(endpoint)
                }
                throw AgentError.bindFailed(endpoint, reason: "\(error)")
            }
        }
        return Sockets(context: context, app: app, admin: admin, events: events, zap: zap)
    }

    /// Creates the folder of an ipc endpoint when missing (`RuntimeDirectory=` does it under systemd).
    private func prepareFolder(for endpoint: String) throws {
        guard let path = ipcPath(of: endpoint) else { return }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        try FileSystem.makeDirectories(folder)
    }

    /// Socket files are mode 0660 and, where configured, owned by the group allowed to use them: the
    /// file permissions are the access control on the box (PROTOCOL.md, Transport).
    private func applyPermissions(_ endpoint: String, group: String?) {
        guard let path = ipcPath(of: endpoint) else { return }
        if chmod(path, 0o660) != 0 {
            logger.warning("cannot chmod the socket file", metadata: ["file": "\(path)", "errno": "\(errno)"])
        }
        guard let group else { return }
        guard let entry = getgrnam(group) else {
            logger.warning(
                "group \(group) does not exist; the socket file keeps the agent's group",
                metadata: ["file": "\(path)"]
            )
            return
        }
        if chown(path, uid_t.max, entry.pointee.gr_gid) != 0 {
            logger.warning(
                "cannot give the socket file to group \(group)",
                metadata: ["file": "\(path)", "errno": "\(errno)"]
            )
        }
    }

    static func removeSocketFile(of endpoint: String) {
        guard let path = ipcPath(of: endpoint) else { return }
        try? FileSystem.remove(path)
    }

    /// libzmq leaves ipc socket files behind on close; a clean stop removes them.
    func removeSocketFiles() {
        for endpoint in [endpoints.app, endpoints.admin, endpoints.events] {
            Self.removeSocketFile(of: endpoint)
        }
    }
}
