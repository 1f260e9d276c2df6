import ArgumentParser
import RangeFSCore

@main
struct RangeFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rangefs",
        abstract: "Mount web directories, WebDAV servers, SSH servers (SFTP), S3 buckets, Subsonic music servers and manifests of remote files; fetch only the bytes that are read.",
        discussion: """
        Each URL in the manifest becomes a read-only file. A read asks the server for just \
        the blocks it needs (HTTP Range) and keeps them in a local cache that survives unmounts.

        'rangefs MANIFEST MOUNTPOINT [-o OPTIONS]' is short for 'rangefs mount', so \
        'mount -t fuse.rangefs' and /etc/fstab lines of type fuse.rangefs work too. \
        'rangefs help SUBCOMMAND' shows each subcommand's options and examples.

        Examples:
          rangefs mount media.txt /mnt/media
          ls -la /mnt/media
          rangefs status /mnt/media
          rangefs unmount /mnt/media
          mount -t fuse.rangefs -o cache_dir=/var/cache/rangefs/media \\
            /etc/rangefs/media.txt /mnt/media
          umount /mnt/media
        """,
        version: RangeFSVersion.description(commit: buildCommit),
        subcommands: [MountCommand.self, ManifestCommand.self, UnmountCommand.self, StatusCommand.self, PauseCommand.self, ResumeCommand.self, EvictCommand.self, PinCommand.self, UnpinCommand.self, VerifyCommand.self, RefreshCommand.self]
    )
}
