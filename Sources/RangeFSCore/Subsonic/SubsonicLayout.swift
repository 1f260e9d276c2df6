import Foundation

/// The names the mount shows for what the API lists, one directory at a time, with no I/O:
/// `Artist/Album (Year)/NN Title.ext` in the ID3 layout, the server's folder and file names in
/// the folder layout. Names are made safe as a playlist's titles are (`FileNameText`: no `/`,
/// no control characters, never hidden) and unique within their directory as a feed's are
/// (`UniqueFileNamer`: ` (2)`, ` (3)` before the extension), in the order the server lists them.
enum SubsonicLayout {
    /// The entries of `directory`, listed by the server as `items`.
    static func entries(of directory: SubsonicAddress.Directory, items: [SubsonicItem],
                        address: SubsonicAddress) -> [WebListingEntry] {
        var namer = UniqueFileNamer()
        let manyDiscs = Set(items.compactMap(\.discNumber)).count > 1
        return items.compactMap { item in
            let isDirectory: Bool = switch directory {
            case .root(.id3), .artist: true
            case .album: false
            case .root(.folders), .folder: item.isDir ?? false
            }
            let parts: FileNameParts
            let url: URL
            if isDirectory {
                parts = FileNameParts(title: directoryName(item, in: directory), fileExtension: nil)
                url = address.directoryURL(childDirectory(item, of: directory))
            } else {
                parts = fileName(item, in: directory, manyDiscs: manyDiscs)
                url = address.downloadURL(id: item.id)
            }
            // Not expected: sanitized text is always a valid name. Left out rather than trapped.
            guard let name = try? namer.name(for: parts) else { return nil }
            return WebListingEntry(name: name.lastComponent, url: url, isDirectory: isDirectory,
                                   size: isDirectory ? nil : item.size, modified: item.createdDate)
        }
    }

    private static func childDirectory(_ item: SubsonicItem, of directory: SubsonicAddress.Directory) -> SubsonicAddress.Directory {
        switch directory {
        case .root(.id3): .artist(id: item.id)
        case .artist: .album(id: item.id)
        default: .folder(id: item.id)
        }
    }

    /// An artist's name; an album's with its year, `Album (1997)`; a folder's title.
    static func directoryName(_ item: SubsonicItem, in directory: SubsonicAddress.Directory) -> String {
        let name = safe(item.name ?? item.title, otherwise: unknownName(in: directory))
        if case .artist = directory, let year = item.year, year > 0 {
            return "\(name) (\(year))"
        }
        return name
    }

    /// A song of an album: `NN Title.ext` (`D-NN Title.ext` on an album of several discs); a file
    /// of a folder: its own name on the server, else its title with its extension.
    static func fileName(_ item: SubsonicItem, in directory: SubsonicAddress.Directory, manyDiscs: Bool) -> FileNameParts {
        // An extension as a file name's would have one: short, letters and digits.
        let suffix = item.suffix.flatMap { FileNameParts.plausibleExtension(of: "track." + $0) == $0 ? $0 : nil }
        if case .album = directory {
            var number = item.track.map { $0 > 0 ? String(format: "%02d ", $0) : "" } ?? ""
            if manyDiscs, let disc = item.discNumber, disc > 0, !number.isEmpty { number = "\(disc)-" + number }
            return FileNameParts(title: number + safe(item.title ?? item.name, otherwise: "Unknown Title"), fileExtension: suffix)
        }
        if let path = item.path, let last = path.split(separator: "/").last, let own = FileNameText.sanitized(last) {
            return FileNameParts(fileName: own)
        }
        return FileNameParts(title: safe(item.title ?? item.name, otherwise: "Unknown Title"), fileExtension: suffix)
    }

    private static func unknownName(in directory: SubsonicAddress.Directory) -> String {
        switch directory {
        case .root(.id3): "Unknown Artist"
        case .artist: "Unknown Album"
        default: "Unknown"
        }
    }

    private static func safe(_ text: String?, otherwise: String) -> String {
        text.flatMap { FileNameText.sanitized($0) } ?? otherwise
    }
}
