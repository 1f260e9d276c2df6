import ArgumentParser
import RangeFSCore

/// `--format`: one of the manifest formats, `index` for a web server's directory listing,
/// `webdav` for a WebDAV collection, or `auto` to detect it (a URL ending in `/` is a listing;
/// otherwise the name, then the content).
struct ManifestFormatOption: ExpressibleByArgument, Equatable {
    /// How a directory's members are asked for, where the URL is a directory.
    enum Directory: Equatable {
        /// The page the server makes of it (a GET).
        case index
        /// A WebDAV `PROPFIND`.
        case webDAV
    }

    /// Nil: detect (or a directory, with `directory`).
    var format: ManifestFormat?
    /// Set when the URL is a directory whose tree is mounted, and says how it is listed.
    var directory: Directory?

    static let auto = ManifestFormatOption(format: nil)
    static let index = ManifestFormatOption(format: nil, directory: .index)
    static let webDAV = ManifestFormatOption(format: nil, directory: .webDAV)

    init(format: ManifestFormat?, directory: Directory? = nil) {
        self.format = format
        self.directory = directory
    }

    init?(argument: String) {
        switch argument.lowercased() {
        case "auto": self = .auto
        case "index": self = .index
        case "webdav": self = .webDAV
        case let name:
            guard let format = ManifestFormat(rawValue: name) else { return nil }
            self.init(format: format)
        }
    }

    var argument: String {
        switch directory {
        case .index: "index"
        case .webDAV: "webdav"
        case nil: format?.rawValue ?? "auto"
        }
    }

    static var allValueStrings: [String] { ["auto"] + ManifestFormat.allCases.map(\.rawValue) + ["index", "webdav"] }

    var defaultValueDescription: String { argument }
}
