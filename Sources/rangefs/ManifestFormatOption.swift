import ArgumentParser
import RangeFSCore

/// `--format`: one of the manifest formats, `index` for a web server's directory listing, or
/// `auto` to detect it (a URL ending in `/` is a listing; otherwise the name, then the content).
struct ManifestFormatOption: ExpressibleByArgument, Equatable {
    /// Nil: detect (or a listing, with `isIndex`).
    var format: ManifestFormat?
    /// The URL is a directory whose listing the server makes: its tree is mounted.
    var isIndex = false

    static let auto = ManifestFormatOption(format: nil)
    static let index = ManifestFormatOption(format: nil, isIndex: true)

    init(format: ManifestFormat?, isIndex: Bool = false) {
        self.format = format
        self.isIndex = isIndex
    }

    init?(argument: String) {
        let name = argument.lowercased()
        if name == "auto" {
            format = nil
        } else if name == "index" {
            format = nil
            isIndex = true
        } else if let format = ManifestFormat(rawValue: name) {
            self.format = format
        } else {
            return nil
        }
    }

    var argument: String { isIndex ? "index" : format?.rawValue ?? "auto" }

    static var allValueStrings: [String] { ["auto"] + ManifestFormat.allCases.map(\.rawValue) + ["index"] }

    var defaultValueDescription: String { argument }
}
