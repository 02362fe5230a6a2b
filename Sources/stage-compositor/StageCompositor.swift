import ArgumentParser
import Server

@main
struct StageCompositor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage-compositor",
        abstract: "IVS-compatible server-side composition: grid/PiP layouts, audio mix, HLS recording, RTMP push.",
        version: BuildInfo.versionDescription,
        subcommands: [ComposeCommand.self, ServeCommand.self, ConfigCommand.self, LayoutCommand.self, NodesCommand.self,
                      CompositionCommand.self]
    )
}
