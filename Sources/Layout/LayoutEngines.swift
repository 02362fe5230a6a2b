extension LayoutConfiguration {
    /// The engine for this configuration (grid when neither or only grid is set).
    public func makeEngine() -> any LayoutEngine {
        GridLayout(configuration: grid ?? GridConfiguration())
    }
}
