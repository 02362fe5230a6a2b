extension LayoutConfiguration {
    /// The engine for this configuration: PiP when `pip` is set, otherwise the grid (IVS:
    /// "Default: Grid layout"). Call `validate()` first; an invalid configuration still gets
    /// an engine (pip wins when both are set) so that the compositor never has no layout.
    public func makeEngine() -> any LayoutEngine {
        if let pip { return PipLayout(configuration: pip) }
        return GridLayout(configuration: grid ?? GridConfiguration())
    }
}
