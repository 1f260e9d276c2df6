import ArgumentParser
import RangeFSCore

/// `--format`: one of the manifest formats, or `auto` to detect it from the name, then the content.
struct ManifestFormatOption: ExpressibleByArgument, Equatable {
    /// Nil: detect.
    var format: ManifestFormat?

    static let auto = ManifestFormatOption(format: nil)

    init(format: ManifestFormat?) {
        self.format = format
    }

    init?(argument: String) {
        let name = argument.lowercased()
        if name == "auto" {
            format = nil
        } else if let format = ManifestFormat(rawValue: name) {
            self.format = format
        } else {
            return nil
        }
    }

    var argument: String { format?.rawValue ?? "auto" }

    static var allValueStrings: [String] { ["auto"] + ManifestFormat.allCases.map(\.rawValue) }

    var defaultValueDescription: String { argument }
}
