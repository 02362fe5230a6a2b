// Which node runs a stage's live work (its publishers and compositions). One host owns every
// stage; in a fleet, the stage's placement in the database says, and work that arrives at a
// node that does not own the stage goes to the one that does: API calls are forwarded, WHIP
// publishers redirected.
public import APIModels
public import Foundation

/// A node of the fleet, as another node reaches it.
public struct FleetPeer: Sendable, Equatable {
    public var nodeId: String
    /// Its API, for calls between nodes.
    public var internalURL: String
    /// Its WHIP base URL as publishers reach it (`…/whip`).
    public var whipURL: String?
    public var rtmpURL: String?

    public init(nodeId: String, internalURL: String, whipURL: String? = nil, rtmpURL: String? = nil) {
        self.nodeId = nodeId
        self.internalURL = internalURL
        self.whipURL = whipURL
        self.rtmpURL = rtmpURL
    }
}

/// Capacity a stage's work holds on this node until it is released.
public struct StageReservation: Sendable, Hashable {
    public var stageArn: String
    public var id: UUID
    public var millicores: Int

    public init(stageArn: String, id: UUID = UUID(), millicores: Int) {
        self.stageArn = stageArn
        self.id = id
        self.millicores = millicores
    }
}

public enum StageClaim: Sendable, Equatable {
    /// This node owns the stage and holds the reservation.
    case local(StageReservation)
    /// Another node owns it (or was just chosen for it).
    case remote(FleetPeer)
}

public protocol StageOwnership: Sendable {
    /// Whether other nodes share the state (reads of compositions come from the store).
    var isFleet: Bool { get }
    /// Reserves `millicores` for the stage on this node when it owns the stage, placing the
    /// stage first when no node holds it (on this node when `preferLocal` and it has room,
    /// else where most room is). `forwarded`: the call came from another node, which found
    /// the stage placed here; if it is not (any more), the caller should retry.
    /// Throws ServiceQuotaExceeded, with the reason, when no node has room.
    func claim(stageArn: String, millicores: Int, preferLocal: Bool, forwarded: Bool) async throws(APIError) -> StageClaim
    /// Gives a reservation back; the stage's placement goes when its last reservation does.
    func release(_ reservation: StageReservation) async
    /// The node that owns the stage, when that is another node.
    func remoteOwner(of stageArn: String) async throws(APIError) -> FleetPeer?
    /// Runs an API operation on `peer`, returning its answer (or its error).
    func forward(_ route: APIOperation.Route, query: String, body: Data, to peer: FleetPeer) async throws(APIError) -> Data
    /// The other nodes alive now (an operation of no one stage, such as RevokeConnectionToken,
    /// is told to each).
    func otherLiveNodes() async throws(APIError) -> [FleetPeer]
}

extension StageOwnership {
    public func otherLiveNodes() async throws(APIError) -> [FleetPeer] { [] }
}

/// One host: every stage is this node's, and nothing is reserved.
public struct SingleNodeOwnership: StageOwnership {
    public init() {}

    public var isFleet: Bool { false }

    public func claim(stageArn: String, millicores: Int, preferLocal: Bool, forwarded: Bool) async throws(APIError) -> StageClaim {
        .local(StageReservation(stageArn: stageArn, millicores: millicores))
    }

    public func release(_ reservation: StageReservation) async {}

    public func remoteOwner(of stageArn: String) async throws(APIError) -> FleetPeer? { nil }

    public func forward(_ route: APIOperation.Route, query: String, body: Data, to peer: FleetPeer) async throws(APIError) -> Data {
        throw .internalServer("\(route.operation.name): no other node to forward to")
    }
}
