// Stage ownership in a fleet: placements in the shared PostgreSQL database (PostgresFleet),
// what this node's own work on each stage reserves (kept here, written to the placement's
// cost), and API calls forwarded to the owner, signed with the fleet's secret.
import APIModels
import AsyncHTTPClient
import Auth
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PostgresStore
import Synchronization

final class FleetOwnership: StageOwnership {
    let store: PostgresCompositionStore
    let nodeId: String
    let incarnation: Int64
    private let secret: String
    private let httpClient: HTTPClient
    private let forwardTimeout: TimeAmount
    private let logger: Logger
    /// Stage ARN → this node's reservations on it.
    private let reservations = Mutex<[String: [UUID: Int]]>([:])

    init(store: PostgresCompositionStore, nodeId: String, incarnation: Int64, secret: String, httpClient: HTTPClient,
         forwardTimeout: TimeAmount = .seconds(30), logger: Logger) {
        self.store = store
        self.nodeId = nodeId
        self.incarnation = incarnation
        self.secret = secret
        self.httpClient = httpClient
        self.forwardTimeout = forwardTimeout
        self.logger = logger
    }

    var isFleet: Bool { true }

    private func reserved(_ stageArn: String) -> Int {
        reservations.withLock { $0[stageArn]?.values.reduce(0, &+) ?? 0 }
    }

    func claim(stageArn: String, millicores: Int, preferLocal: Bool, forwarded: Bool) async throws(APIError) -> StageClaim {
        let reservation = StageReservation(stageArn: stageArn, millicores: millicores)
        let current = try await placement(stageArn)
        if let current, current.0.nodeId != nodeId || current.0.incarnation != incarnation {
            guard !forwarded else {
                throw .conflict("stage \(stageArn) is no longer placed on node \(nodeId) but on \(current.0.nodeId); retry the call")
            }
            return .remote(try Self.peer(current.1, stageArn: stageArn))
        }
        if current == nil {
            let result: PlacementResult
            do {
                result = try await store.place(stageArn: stageArn, costMillicores: millicores, preferring: preferLocal ? nodeId : nil)
            } catch {
                throw .internalServer("placement: \(error.message)")
            }
            switch result {
            case .refused(let reason):
                throw .serviceQuotaExceeded(reason)
            case .placed(let placement) where placement.nodeId != nodeId || placement.incarnation != incarnation:
                guard !forwarded, let node = try await self.placement(stageArn)?.1 else {
                    throw .conflict("stage \(stageArn) was just placed on node \(placement.nodeId); retry the call")
                }
                logger.info("stage placed on another node", metadata: ["stage.arn": "\(stageArn)", "placement.node": "\(placement.nodeId)",
                                                                       "placement.millicores": "\(millicores)"])
                return .remote(try Self.peer(node, stageArn: stageArn))
            case .placed:
                logger.info("stage placed on this node", metadata: ["stage.arn": "\(stageArn)", "placement.millicores": "\(millicores)"])
            }
        }
        // Placed here: this work's cost joins what the stage reserves, if the node has room.
        reservations.withLock { $0[stageArn, default: [:]][reservation.id] = millicores }
        guard try await syncCost(stageArn) else {
            reservations.withLock { $0[stageArn]?[reservation.id] = nil }
            _ = try? await syncCost(stageArn)
            throw .serviceQuotaExceeded("node \(nodeId), which holds stage \(stageArn), has no room for \(millicores) more millicores; "
                                        + "the stage's work stays on one node")
        }
        return .local(reservation)
    }

    /// Writes what this node reserves for the stage as its placement's cost, again until it
    /// stops changing meanwhile. False: a rise did not fit (or the placement is no longer ours).
    private func syncCost(_ stageArn: String) async throws(APIError) -> Bool {
        var total = reserved(stageArn)
        while true {
            let accepted: Bool
            do {
                accepted = try await store.setPlacementCost(stageArn: stageArn, nodeId: nodeId, incarnation: incarnation,
                                                           costMillicores: total)
            } catch {
                throw .internalServer("placement: \(error.message)")
            }
            let now = reserved(stageArn)
            if !accepted || now == total { return accepted }
            total = now
        }
    }

    func release(_ reservation: StageReservation) async {
        let remaining = reservations.withLock { all -> Int in
            all[reservation.stageArn]?[reservation.id] = nil
            if all[reservation.stageArn]?.isEmpty ?? false { all[reservation.stageArn] = nil }
            return all[reservation.stageArn]?.count ?? 0
        }
        do {
            if remaining == 0 {
                if try await store.releasePlacement(stageArn: reservation.stageArn, nodeId: nodeId, incarnation: incarnation) {
                    logger.info("stage placement released", metadata: ["stage.arn": "\(reservation.stageArn)"])
                }
            } else {
                _ = try await syncCost(reservation.stageArn)
            }
        } catch {
            logger.warning("placement not updated; it goes with this node's lease", metadata: [
                "stage.arn": "\(reservation.stageArn)", "error": "\(error)"])
        }
    }

    func otherLiveNodes() async throws(APIError) -> [FleetPeer] {
        let nodes: [FleetNodeStatus]
        do { nodes = try await store.fleetNodes() } catch { throw .internalServer("fleet nodes: \(error.message)") }
        return nodes.filter { $0.live && $0.registration.nodeId != nodeId }.map { node in
            FleetPeer(nodeId: node.registration.nodeId, internalURL: node.registration.internalURL, whipURL: node.registration.whipURL,
                      rtmpURL: node.registration.rtmpURL)
        }
    }

    func remoteOwner(of stageArn: String) async throws(APIError) -> FleetPeer? {
        guard let found = try await placement(stageArn), found.0.nodeId != nodeId || found.0.incarnation != incarnation else {
            return nil
        }
        return try Self.peer(found.1, stageArn: stageArn)
    }

    private func placement(_ stageArn: String) async throws(APIError) -> (StagePlacement, FleetNodeStatus)? {
        do { return try await store.placement(stageArn: stageArn) } catch { throw .internalServer("placement: \(error.message)") }
    }

    /// The owner as a peer, if it is still alive; a node whose lease ran out is taken over by
    /// a survivor within a sweep, and meanwhile its stages' calls are refused, not hung.
    private static func peer(_ node: FleetNodeStatus, stageArn: String) throws(APIError) -> FleetPeer {
        guard node.live else {
            throw .conflict("stage \(stageArn) is on node \(node.registration.nodeId), whose lease expired \(-node.leaseRemainingMs) ms "
                            + "ago; a surviving node takes its work over, then retry")
        }
        let registration = node.registration
        return FleetPeer(nodeId: registration.nodeId, internalURL: registration.internalURL, whipURL: registration.whipURL,
                         rtmpURL: registration.rtmpURL)
    }

    func forward(_ route: APIOperation.Route, query: String, body: Data, to peer: FleetPeer) async throws(APIError) -> Data {
        let path = route.path
        let method = route.operation.httpMethod.rawValue
        let timeMs = Int64((Date().timeIntervalSince1970 * 1000).rounded(.down))
        var request = HTTPClientRequest(url: peer.internalURL + path + (query.isEmpty ? "" : "?" + query))
        request.method = HTTPMethod(rawValue: method)
        request.headers.add(name: "content-type", value: "application/json")
        request.headers.add(name: FleetCallSignature.nodeHeader, value: nodeId)
        request.headers.add(name: FleetCallSignature.timeHeader, value: String(timeMs))
        let nonce = FleetCallSignature.makeNonce()
        request.headers.add(name: FleetCallSignature.nonceHeader, value: nonce)
        request.headers.add(name: FleetCallSignature.signatureHeader,
                            value: FleetCallSignature.sign(secret: secret, method: method, path: path, query: query, timeMs: timeMs,
                                                           nonce: nonce, body: body))
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: HTTPResponseStatus, errorType: String?, answer: ByteBuffer
        do {
            let response = try await httpClient.execute(request, timeout: forwardTimeout)
            status = response.status
            errorType = response.headers.first(name: "x-amzn-ErrorType")
            answer = try await response.body.collect(upTo: 16 * 1024 * 1024)
        } catch {
            throw .internalServer("\(route.operation.name) on node \(peer.nodeId), which owns the stage, failed: \(error)")
        }
        logger.debug("forwarded to the stage's node", metadata: ["operation": "\(route.operation.name)", "node": "\(peer.nodeId)",
                                                                 "status": "\(status.code)"])
        guard status == .ok else {
            let message = (try? JSONDecoder().decode(ForwardedError.self, from: Data(answer.readableBytesView)))?.message
                ?? "node \(peer.nodeId) answered \(status.code)"
            throw APIError(errorType.flatMap(APIError.Code.init(rawValue:)) ?? .internalServer, message)
        }
        return Data(answer.readableBytesView)
    }

    private struct ForwardedError: Decodable { var message: String }
}
