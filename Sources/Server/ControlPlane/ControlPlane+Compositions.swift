// StartComposition, StopComposition, UpdateComposition, GetComposition, ListCompositions. In
// a fleet, starting, stopping and updating run on the stage's node: a call that reaches
// another node is forwarded there (with its body as sent: the owner prepares the overlays).
import APIModels
import Foundation
import Persistence

extension ControlPlane {
    func handleCompositions(_ route: APIOperation.Route, query: String, body: Data, forwarded: Bool) async throws(APIError) -> Data {
        func remoteOwner(_ stageArn: String) async throws(APIError) -> FleetPeer? {
            forwarded ? nil : try await manager.ownership.remoteOwner(of: stageArn)
        }
        switch route.operation {
        case .startComposition:
            let request = try decode(StartCompositionRequest.self, body)
            // Overlay files are read and decoded here, off the manager, before anything starts.
            let overlays = try manager.prepareOverlays(request.overlays)
            switch try await manager.start(request, overlays: overlays, forwarded: forwarded) {
            case .started(let composition): return try APIJSON.encode(StartCompositionResponse(composition: composition))
            case .elsewhere(let peer): return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
        case .stopComposition:
            let request = try decode(StopCompositionRequest.self, body)
            if let stageArn = try await manager.stageOfStoredComposition(arn: request.arn), let peer = try await remoteOwner(stageArn) {
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
            try await manager.stop(arn: request.arn)
            return try APIJSON.encode(StopCompositionResponse())
        case .updateComposition:
            let request = try decode(UpdateCompositionRequest.self, body)
            if let stageArn = try await manager.stageOfStoredComposition(arn: request.arn), let peer = try await remoteOwner(stageArn) {
                return try await manager.ownership.forward(route, query: query, body: body, to: peer)
            }
            let overlays = try manager.prepareOverlays(request.overlays)
            return try APIJSON.encode(UpdateCompositionResponse(composition: try await manager.update(request, overlays: overlays)))
        case .getComposition:
            let request = try decode(GetCompositionRequest.self, body)
            var composition = try await manager.composition(arn: request.arn)
            if composition.state == .starting || composition.state == .active,
               let id = IVSARN(parsing: composition.arn)?.resourceID {
                composition.whepUrl = configuration.whepEndpoint(compositionId: id)
            }
            return try APIJSON.encode(GetCompositionResponse(composition: composition))
        case .listCompositions:
            let request = try decode(ListCompositionsRequest.self, body)
            let page = try await storePage(request, .listCompositions, key: \.arn) { after, limit throws(APIError) in
                try await manager.compositions(stageArn: request.filterByStageArn, after: after, limit: limit)
            } keep: { composition throws(APIError) -> CompositionSummary? in
                let uses = request.filterByEncoderConfigurationArn.map { arn in
                    composition.destinations.contains {
                        $0.configuration.channel?.encoderConfigurationArn == arn
                            || ($0.configuration.s3?.encoderConfigurationArns.contains(arn) ?? false)
                    }
                } ?? true
                return uses ? composition.summary : nil
            }
            return try APIJSON.encode(ListCompositionsResponse(compositions: page.items, nextToken: page.nextToken))
        default:
            throw .internalServer("\(route.operation.name) is not handled by handleCompositions")
        }
    }
}
