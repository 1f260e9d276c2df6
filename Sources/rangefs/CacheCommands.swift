import ArgumentParser
import Foundation
import RangeFSCore

/// A mountpoint and paths inside it, for the commands that act on files of a mount.
struct MountPaths: ParsableArguments {
    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    @Argument(help: "Files or directories inside the mount (a directory stands for every file in it).")
    var paths: [String] = []

    /// Sends `command` with the paths as the mount sees them (relative to the mountpoint)
    /// and prints what the mount says it did.
    func send(_ command: ControlCommand, done: String) throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        let inside = paths.map { path in
            let absolute = absolutePath(path)
            return absolute.hasPrefix(target.mountpoint + "/") ? String(absolute.dropFirst(target.mountpoint.count + 1)) : path
        }
        let reply = try target.send(command, paths: inside)
        Terminal.write((reply.message ?? done) + "\n")
    }
}

struct EvictCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Drop cached data now (files in use are kept).",
        discussion: """
        Without paths, every file's cached data goes; a directory stands for every file in it. \
        Evicted files are fetched again when read.

        Examples:
          rangefs evict /mnt/media
          rangefs evict /mnt/media /mnt/media/podcast/episode-01.mp3
        """
    )

    @OptionGroup var target: MountPaths

    func run() throws {
        try target.send(.evict, done: "evicted")
    }
}

struct PinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Fetch files now and keep them whatever the cache limits.",
        discussion: """
        Pinned files are completed ahead of everything else (also with --prefetch none) and \
        never evicted; 'rangefs unpin' releases them. A directory stands for every file in it.

        Example:
          rangefs pin /mnt/media /mnt/media/podcast
        """
    )

    @OptionGroup var target: MountPaths

    func run() throws {
        try target.send(.pin, done: "pinned")
    }
}

struct UnpinCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin",
        abstract: "Let pinned files be evicted again.",
        discussion: """
        Example:
          rangefs unpin /mnt/media /mnt/media/podcast
        """
    )

    @OptionGroup var target: MountPaths

    func run() throws {
        try target.send(.unpin, done: "unpinned")
    }
}

struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Ask the server whether cached files changed; discard the ones that did.",
        discussion: """
        Every file with cached data is checked against the server (size, ETag, Last-Modified). \
        A changed file loses its cached data and is fetched again, as the new version, when read. \
        Exits non-zero when a file changed or could not be checked.

        Example:
          rangefs verify /mnt/media
        """
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    func run() throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        let reply = try target.send(.verify, paths: nil, timeout: .seconds(120))
        let message = reply.message ?? "verified"
        Terminal.write(message + "\n")
        if !message.hasSuffix("all unchanged") { throw ExitCode(1) }
    }
}

struct RefreshCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "refresh",
        abstract: "Read the manifest again and update the mount without unmounting.",
        discussion: """
        New entries appear, removed ones vanish (their cached data stays until evicted), and \
        entries whose URL changed start over. A manifest with an error changes nothing.

        Example:
          rangefs refresh /mnt/media
        """
    )

    @Argument(help: "Where the manifest is mounted.")
    var mountpoint: String

    func run() throws {
        let target = try MountControlTarget(mountpoint: absolutePath(mountpoint))
        let reply = try target.send(.refresh, paths: nil, timeout: .seconds(60))
        Terminal.write((reply.message ?? "refreshed") + "\n")
    }
}
