// The control API's request bodies, as a caller on the network sends them: the first byte
// picks the operation, the second how many participants a composition's layout is planned
// for, the rest is the body. Every body is decoded and validated as the control plane does;
// a list request's token is paginated over, an encoder configuration gets its defaults, and
// a composition's layout is planned on its canvas, its overlays' files resolved in their
// folder, and a replication is checked for a cycle among the replicas the second byte makes
// up. The answer is a ValidationException or a value, never a trap; a planned layout stays on
// its canvas; an accepted overlay file stays in its folder and its colours parse; a cycle's
// path is real.

import APIModels
import Foundation
import Layout
import Stages
import MediaCore

enum APIBodiesTarget {
    static func run(_ input: [UInt8]) -> FuzzReach {
        var reader = FuzzReader(input)
        let selector = Int(reader.byte())
        let participants = Int(reader.byte() % 16)
        let body = Data(reader.rest())
        let shapes = APIOperation.jsonBodyRequests
        switch selector % (shapes.count + 3) {
        case shapes.count:
            guard let tags = try? APIJSON.decode(TagResourceRequest.Body.self, from: body) else { return FuzzReach() }
            return accepted(try? TagResourceRequest(resourceArn: arn, body: tags).validate())
        case shapes.count + 1:
            return accepted(try? UntagResourceRequest(resourceArn: arn, query: String(decoding: body, as: UTF8.self)).validate())
        case shapes.count + 2:
            let text = String(decoding: body, as: UTF8.self)
            if let parsed = IVSARN(parsing: text) { _ = IVSARN(parsing: parsed.description, expecting: parsed.resourceType) }
            return accepted(try? ListTagsForResourceRequest(resourceArn: text).validate())
        case let index:
            return check(shapes[index], body: body, participants: participants)
        }
    }

    static let arn = "arn:aws:ivs:us-east-1:123456789012:stage/AbCdEfGhIjKl"

    private static func accepted(_ result: Void?) -> FuzzReach { FuzzReach(accepted: result == nil ? 0 : 1) }

    private static func check<Request: Decodable & APIRequest>(_ type: Request.Type, body: Data, participants: Int) -> FuzzReach {
        guard let request = try? APIJSON.decodeRequest(type, from: body) else { return FuzzReach() }
        if let page = try? APIJSON.decode(PageRequest.self, from: body), page.nextToken != nil || page.maxResults != nil {
            let keys = (0..<participants).map { "key\($0)" }
            _ = try? Pagination.page(keys, key: { $0 }, nextToken: page.nextToken, maxResults: page.maxResults,
                                     defaultMaxResults: Pagination.defaultMaxResults(for: Request.operation))
        }
        switch request {
        case let create as CreateEncoderConfigurationRequest:
            guard let arn = IVSARN(parsing: "arn:aws:ivs:us-east-1:123456789012:encoder-configuration/AbCdEfGhIjKl") else {
                return FuzzReach()
            }
            let video = create.makeEncoderConfiguration(arn: arn).video
            if let width = video?.width, let height = video?.height {
                plan(LayoutConfiguration(), canvas: PixelSize(width: width, height: height), participants: participants)
            }
        case let start as StartParticipantReplicationRequest:
            replicationCycle(start, replicas: participants)
        case let start as StartCompositionRequest:
            plan(start.layout ?? LayoutConfiguration(), canvas: PixelSize(width: 1280, height: 720), participants: participants)
            if let overlays = start.overlays { confine(overlays) }
        case let update as UpdateCompositionRequest:
            if let overlays = update.overlays { confine(overlays) }
            if let layout = update.layout {
                plan(layout, canvas: PixelSize(width: 1280, height: 720), participants: participants)
                glide(to: layout, transitionMs: update.transitionMs ?? 0, canvas: PixelSize(width: 1280, height: 720),
                      participants: participants)
            }
        default:
            break
        }
        return FuzzReach(accepted: 1)
    }

    /// The glide from the default grid to `layout` (one participant fewer before, so one comes
    /// in), at a point of the transition the participant count picks: every tile of every
    /// frame on the canvas, none empty, every opacity in 0...1.
    private static func glide(to layout: LayoutConfiguration, transitionMs: Int, canvas: PixelSize, participants: Int) {
        let people = (0..<participants).map { index in
            LayoutParticipant(participantId: "p\(index)", attributes: [:], arrivalIndex: index,
                              video: .publishing(PixelSize(width: 640, height: 360)))
        }
        let from = LayoutConfiguration.defaultGrid.makeEngine().tiles(canvas: canvas, participants: Array(people.dropLast()))
        let to = layout.makeEngine().tiles(canvas: canvas, participants: people)
        let duration = Int64(transitionMs) * 1000
        let transition = LayoutTransition(from: from, to: to, start: 0, duration: duration)
        let whole = Rect(x: 0, y: 0, width: canvas.width, height: canvas.height)
        for item in transition.tiles(at: duration * Int64(participants) / 15) {
            FuzzBound(item.tile.rect.width > 0 && item.tile.rect.height > 0 && whole.contains(item.tile.rect)
                      && (0...1).contains(item.opacity), "transition frame \(item) off the canvas for \(layout)")
        }
    }

    /// Tiles for `participants` publishers (every third one featured, every fourth with its
    /// camera off): each on the canvas, none empty.
    private static func plan(_ layout: LayoutConfiguration, canvas: PixelSize, participants: Int) {
        let featured = layout.grid?.featuredParticipantAttribute ?? layout.pip?.featuredParticipantAttribute
        let people = (0..<participants).map { index in
            LayoutParticipant(participantId: "p\(index)",
                              attributes: featured.map { index % 3 == 0 ? [$0: "true"] : [:] } ?? [:],
                              arrivalIndex: index,
                              video: index % 4 == 3 ? .stopped : .publishing(PixelSize(width: 640 + index * 160, height: 360 + index * 90)))
        }
        let whole = Rect(x: 0, y: 0, width: canvas.width, height: canvas.height)
        for tile in layout.makeEngine().tiles(canvas: canvas, participants: people) {
            FuzzBound(tile.rect.width > 0 && tile.rect.height > 0 && whole.contains(tile.rect),
                      "tile \(tile) off the \(canvas.width)x\(canvas.height) canvas for \(layout)")
        }
    }

    /// Accepted overlays name files that resolve inside the overlay folder (or the folder
    /// itself, which the loader refuses as no file), and colours that parse.
    private static func confine(_ overlays: OverlayConfiguration) {
        let folder = "/srv/overlays"
        let files = (overlays.images ?? []).map(\.file) + [overlays.background?.file, overlays.slate?.file].compactMap { $0 }
        for file in files {
            let path = URL(fileURLWithPath: folder).appendingPathComponent(file).standardizedFileURL.path
            FuzzBound(path == folder || path.hasPrefix(folder + "/"), "overlay file '\(file)' resolves to \(path), outside \(folder)")
        }
        let colours = [overlays.labels?.textColor, overlays.labels?.backgroundColor, overlays.background?.color,
                       overlays.slate?.textColor, overlays.slate?.backgroundColor]
            + (overlays.banners ?? []).flatMap { [$0.textColor, $0.backgroundColor] }
        for colour in colours.compactMap({ $0 }) {
            FuzzBound(RGBAColor(hex: colour) != nil, "overlay colour '\(colour)' accepted but does not parse")
        }
    }

    /// The pagination members every List request has.
    private struct PageRequest: Decodable {
        var nextToken: String?
        var maxResults: Int?
    }

    /// The cycle check StartParticipantReplication makes, over the body's two stages and
    /// `replicas` existing replicas among them and a few others (edges picked by the count's bits).
    private static func replicationCycle(_ request: StartParticipantReplicationRequest, replicas: Int) {
        let stages = [request.sourceStageArn, request.destinationStageArn, "s0", "s1"]
        var edges: [(String, String)] = []
        for bit in 0..<4 where replicas & (1 << bit) != 0 {
            edges.append((stages[bit], stages[(bit + 1 + replicas) % stages.count]))
        }
        let graph = ReplicationGraph(edges: edges)
        guard let path = graph.path(from: request.destinationStageArn, to: request.sourceStageArn) else { return }
        precondition(path.first == request.destinationStageArn && path.last == request.sourceStageArn, "a cycle's path has its ends")
        precondition(zip(path, path.dropFirst()).allSatisfy { step in edges.contains { $0 == step } }, "a cycle's path follows replicas")
    }
}
