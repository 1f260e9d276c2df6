import ArgumentParser
import RangeFSCore

struct PauseCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pause",
        abstract: "Pause background fetching; reads still fetch what they need.",
        discussion: """
        The prefetcher stops completing files in the background, leaving the link to the \
        programs that read: playing, copying and every other read keep working and fetch just \
        the bytes they ask for. 'rangefs resume' starts background fetching again.

        Example:
          rangefs pause /mnt/media
        """
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    func run() throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        _ = try target.perform(.pause)
        Terminal.write("paused background fetching for \(target.mountpoint)\n")
    }
}
