/// The version of RangeFS, written here and nowhere else: scripts/package.sh reads it for the
/// package's version and file names and checks that packaging/changelog's newest entry matches.
public enum RangeFSVersion {
    public static let current = "0.4.0"

    /// What `rangefs --version` prints: the version and the commit the binary was built from,
    /// or plainly that the build did not record one (a plain `swift build` does not ask git).
    public static func description(commit: String?) -> String {
        guard let commit, !commit.isEmpty else { return "\(current) (commit not recorded by this build)" }
        return "\(current) (commit \(commit))"
    }
}
