// StopComposition, the reads the API makes (Get/List, in use, tags).
public import APIModels
import Foundation
import Lifecycle
import Logging
import MediaCore
public import Persistence
import ServiceLifecycle
import Destinations
import Fleet
import Events
import EventSinks
import HLS
import LiveStage
import Pipeline
import Stages
import Storage
import Composition

extension CompositionManager {
    public func stop(arn: String) async throws(APIError) {
        guard let entry = visibleEntry(arn) else { throw .resourceNotFound("arn: composition \(arn) not found") }
        guard !entry.isTerminal else { return }
        entry.logger.info("stop requested")
        await apply(.stopRequested, to: arn)
    }

    /// UpdateComposition: a running (STARTING or ACTIVE) composition takes a new layout,
    /// participants' audio settings and overlays from its next output frame on; GetComposition
    /// shows the layout and overlays in force from the answer on. Its overlays are prepared
    /// here, on the actor (the control plane prepares them before, off it).
    public func update(_ request: UpdateCompositionRequest) async throws(APIError) -> Composition {
        try await update(request, overlays: try prepareOverlays(request.overlays))
    }

    /// The same, with the request's overlays prepared (`prepareOverlays`). Overlays given are
    /// always posted, even the ones in force: their files are read again.
    func update(_ request: UpdateCompositionRequest, overlays: PreparedOverlays?) async throws(APIError) -> Composition {
        guard var entry = visibleEntry(request.arn) else { throw .resourceNotFound("arn: composition \(request.arn) not found") }
        let state = entry.stored.composition.state
        guard state == .starting || state == .active, let handle = entry.handle else {
            throw .conflict("arn: composition \(request.arn) is \(state.rawValue); only a STARTING or ACTIVE composition can be updated")
        }
        var change = CompositionDirection(audio: request.audio ?? [:], overlays: overlays)
        if let layout = request.layout, layout != entry.stored.composition.layout {
            change.layout = layout
            change.transitionMs = request.transitionMs ?? 0
        }
        if change.layout != nil || !change.audio.isEmpty || change.overlays != nil { handle.direct(change) }
        if let layout = change.layout { entry.stored.composition.layout = layout }
        if let overlays { entry.stored.composition.overlays = overlays.configuration.isEmpty ? nil : overlays.configuration }
        if change.layout != nil || overlays != nil {
            entries[request.arn] = entry
            dirty.insert(request.arn)
            await flush()
        }
        entry.logger.info("composition updated", metadata: [
            "layout.changed": "\(change.layout != nil)", "transition.ms": "\(change.transitionMs)",
            "audio.participants": "\(change.audio.count)", "overlays.changed": "\(change.overlays != nil)"])
        return entry.stored.composition
    }

    /// A composition this node runs or ran; in a fleet, else the one the store has (another
    /// node's).
    public func composition(arn: String) async throws(APIError) -> Composition {
        if let entry = visibleEntry(arn) { return entry.stored.composition }
        if ownership.isFleet, let stored = try await storedComposition(arn) { return stored.composition }
        throw .resourceNotFound("arn: composition \(arn) not found")
    }

    /// Every visible composition (ended ones until their retention runs out); in a fleet, with
    /// the other nodes' from the store.
    public func compositions() async throws(APIError) -> [Composition] {
        let now = clock.now()
        var all: [String: Composition] = [:]
        if ownership.isFleet {
            do {
                for stored in try await store.compositions() { all[stored.arn] = stored.composition }
            } catch {
                throw .internalServer("composition store: \(error.message)")
            }
        }
        for entry in entries.values where !isExpired(entry, now: now) { all[entry.stored.arn] = entry.stored.composition }
        return all.values.sorted { $0.arn < $1.arn }
    }

    /// A page of `compositions()` after `after` by ARN (of `stageArn`'s, when given): in a
    /// fleet, a page of the store's with this node's own among it; `nextKey` is the store's.
    public func compositions(stageArn: String?, after: String?, limit: Int) async throws(APIError) -> KeysetPage<Composition> {
        var page: [String: Composition] = [:]
        var nextKey: String?
        if ownership.isFleet {
            do {
                let stored = try await store.compositions(stageArn: stageArn, after: after, limit: limit)
                for value in stored.items { page[value.arn] = value.composition }
                nextKey = stored.nextKey
            } catch {
                throw .internalServer("composition store: \(error.message)")
            }
        }
        let now = clock.now()
        for entry in entries.values where !isExpired(entry, now: now) {
            let composition = entry.stored.composition
            guard after.map({ $0.utf8.lexicographicallyPrecedes(composition.arn.utf8) }) ?? true,
                  nextKey.map({ !$0.utf8.lexicographicallyPrecedes(composition.arn.utf8) }) ?? true,
                  stageArn.map({ composition.stageArn == $0 }) ?? true else { continue }
            page[composition.arn] = composition
        }
        return KeysetPage(items: page.values.sorted { $0.arn.utf8.lexicographicallyPrecedes($1.arn.utf8) }, nextKey: nextKey)
    }

    func storedComposition(_ arn: String) async throws(APIError) -> StoredComposition? {
        do { return try await store.composition(arn: arn) } catch { throw .internalServer("composition store: \(error.message)") }
    }

    /// The stage of a composition this node does not run (another node's, in a fleet).
    public func stageOfStoredComposition(arn: String) async throws(APIError) -> String? {
        guard entries[arn] == nil, ownership.isFleet else { return nil }
        return try await storedComposition(arn)?.composition.stageArn
    }

    /// Compositions not yet ended that use `arn` (an encoder or storage configuration, or a
    /// stage); in a fleet, any node's.
    public func isInUse(_ arn: String) async throws(APIError) -> Bool {
        func uses(_ composition: Composition) -> Bool {
            guard composition.state != .stopped && composition.state != .failed else { return false }
            return composition.stageArn == arn || composition.destinations.contains { destination in
                let c = destination.configuration
                return c.channel?.encoderConfigurationArn == arn || c.s3?.storageConfigurationArn == arn
                    || (c.s3?.encoderConfigurationArns.contains(arn) ?? false)
            }
        }
        if entries.values.contains(where: { uses($0.stored.composition) }) { return true }
        guard ownership.isFleet else { return false }
        return try await compositions().contains(where: uses)
    }

    /// Replaces a visible composition's tags with `update(current)`.
    public func updateTags(arn: String, _ update: @Sendable (Tags) -> Tags) async throws(APIError) -> Tags {
        guard var entry = visibleEntry(arn) else {
            // In a fleet, one no node runs any more (it ended elsewhere, or its node is gone): the
            // stored record, which the store lets this node write only while no other node holds the stage.
            guard ownership.isFleet, var stored = try await storedComposition(arn) else {
                throw .resourceNotFound("resourceArn: \(arn) not found")
            }
            let tags = update(stored.composition.tags ?? [:])
            stored.composition.tags = tags
            do { try await store.putComposition(stored) } catch {
                throw .internalServer("the composition's tags could not be stored: \(error.message)")
            }
            return tags
        }
        let tags = update(entry.stored.composition.tags ?? [:])
        entry.stored.composition.tags = tags
        entries[arn] = entry
        dirty.insert(arn)
        await flush()
        return tags
    }
}
