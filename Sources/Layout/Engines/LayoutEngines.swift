extension LayoutConfiguration {
    /// The engine for this configuration: PiP when `pip` is set, otherwise the grid (IVS:
    /// "Default: Grid layout"). Call `validate()` first; an invalid configuration still gets
    /// an engine (pip wins when both are set) so that the compositor never has no layout.
    public func makeEngine() -> any LayoutEngine {
        // The active speaker is featured through an attribute the compositor sets (in place
        // of `featuredParticipantAttribute`).
        if var pip {
            if pip.featured == .activeSpeaker { pip.featuredParticipantAttribute = ActiveSpeakerAttribute.key }
            return PipLayout(configuration: pip)
        }
        var grid = grid ?? GridConfiguration()
        if grid.featured == .activeSpeaker { grid.featuredParticipantAttribute = ActiveSpeakerAttribute.key }
        return GridLayout(configuration: grid)
    }
}
