import ArgumentParser
import RangeFSCore

struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume",
        abstract: "Resume background fetching after 'rangefs pause'.",
        discussion: """
        The prefetcher goes back to completing files in the background, following the mount's \
        prefetch policy. Resuming a mount that is not paused changes nothing.

        Example:
          rangefs resume /mnt/media
        """
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    func run() throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        _ = try target.perform(.resume)
        Terminal.write("resumed background fetching for \(target.mountpoint)\n")
    }
}
