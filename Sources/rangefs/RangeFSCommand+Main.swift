import ArgumentParser
import Foundation

extension RangeFSCommand {
    /// The names that may start a command line: subcommands and the built-in `help`.
    static var subcommandNames: Set<String> {
        Set(configuration.subcommands.map { $0._commandName } + ["help"])
    }

    /// Accepts the mount.fuse3 form (`rangefs MANIFEST MOUNTPOINT -o OPTIONS`, as run by
    /// `mount -t fuse.rangefs` and /etc/fstab) and RangeFS settings inside `-o`, then runs the
    /// command as usual.
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        let normalized: [String]
        do {
            normalized = try MountInvocation.normalize(arguments, subcommands: subcommandNames)
        } catch {
            writeError("""
                Error: \(error.message)
                Usage: \(usageString(for: MountCommand.self))
                  See 'rangefs help mount' for more information.
                """)
            Foundation.exit(ExitCode.validationFailure.rawValue)
        }
        main(normalized)
    }
}
