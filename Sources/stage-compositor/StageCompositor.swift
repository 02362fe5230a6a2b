import ArgumentParser

@main
struct StageCompositor: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stage-compositor",
        abstract: "IVS-compatible server-side composition: grid/PiP layouts, audio mix, HLS recording, RTMP push.",
        subcommands: [ComposeCommand.self, LayoutCommand.self]
    )
}
