import Foundation

extension Manifest {
    /// The manifest with `headers` added to every entry (with `origin`, to those on its origin
    /// alone: a listed tree's files on another server than its root's get none); an entry's
    /// own header of the same name wins, whatever the case of either name. For headers given
    /// outside the manifest, such as on the command line; check them first with
    /// `headerProblem(name:value:)`.
    public func addingHeaders(_ headers: [String: String], onlyOn origin: URL? = nil) -> Manifest {
        // Nothing to add: no copy of 100,000 entries either.
        if headers.isEmpty { return self }
        var manifest = self
        for index in manifest.entries.indices where origin.map({ manifest.entries[index].url.isSameOrigin(as: $0) }) ?? true {
            manifest.entries[index].headers = HeaderMapReader.merging(manifest.entries[index].headers, over: headers)
        }
        return manifest
    }

    /// Why a header cannot be sent with every request (a line break, a bad name, or one
    /// RangeFS sets itself, such as `Range`), or nil if it can. The same rules manifests follow;
    /// the value is never quoted in the reason.
    public static func headerProblem(name: String, value: String) -> String? {
        do throws(ManifestProblem) {
            try HeaderFieldValidator.validate(name: name, value: value)
            return nil
        } catch {
            return error.reason
        }
    }
}
