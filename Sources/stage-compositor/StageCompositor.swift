import ArgumentParser

@main
struct StageCompositor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage-compositor",
        abstract: "IVS-compatible server-side composition: grid/PiP layouts, audio mix, HLS recording, RTMP push.",
        subcommands: [ComposeCommand.self, ServeCommand.self, ConfigCommand.self, LayoutCommand.self, NodesCommand.self]
    )
}
