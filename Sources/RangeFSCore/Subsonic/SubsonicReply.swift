import Foundation

/// One reply of the Subsonic API in its JSON form (`f=json`), read with caps: the document is
/// already bounded by the listing caps (`ListingDownload.maxBytes`), and a reply of more items
/// than the mount may show is refused (`--max-listed-entries`). Pure: no I/O.
public struct SubsonicReply: Sendable, Equatable {
    /// The API version the server speaks (`1.12.0`), failed or not.
    public var version: SubsonicVersion?
    /// The artists of `getArtists` or `getIndexes`, the albums of `getArtist`, the songs of
    /// `getAlbum`, the children of `getMusicDirectory` (and `getIndexes`'s files at the top).
    public var items: [SubsonicItem]

    /// The longest id kept (servers use numbers, UUIDs, or short prefixed hex: `al-1f3a…`).
    public static let maxIDBytes = 512

    /// Reads a reply. Throws the server's own error (`status: failed`) as `.api`, and a body
    /// that is no such reply, or one of more than `maxItems` items, as `.unreadable`.
    public static func parse(_ body: Data, maxItems: Int = .max) throws(SubsonicReplyError) -> SubsonicReply {
        let envelope: Envelope
        do {
            envelope = try JSONDecoder().decode(Envelope.self, from: body)
        } catch {
            throw .unreadable("the reply is not a Subsonic API reply in JSON (\(Self.describe(error)))")
        }
        let response = envelope.response
        let version = response.version.flatMap(SubsonicVersion.init)
        guard response.status == "ok" else {
            if let error = response.error {
                throw .api(SubsonicAPIError(code: error.code ?? 0, message: error.message ?? "", serverVersion: version))
            }
            throw .unreadable("the reply's status is \(response.status.map { DisplayText.quoted($0) } ?? "missing"), not ok, and it names no error")
        }
        var items: [SubsonicItem] = []
        for index in response.artists?.index ?? [] { items += index.artist ?? [] }
        for index in response.indexes?.index ?? [] { items += (index.artist ?? []).map { $0.asDirectory() } }
        items += response.indexes?.child ?? []
        items += response.artist?.album ?? []
        items += response.album?.song ?? []
        items += response.directory?.child ?? []
        guard items.count <= maxItems else {
            throw .unreadable("more than \(maxItems) entries in one directory, more than the mount holds (--max-listed-entries)")
        }
        // Every id goes into a URL the mount keeps: one longer than any server makes is left out.
        return SubsonicReply(version: version, items: items.filter { !$0.id.isEmpty && $0.id.utf8.count <= maxIDBytes })
    }

    /// A decoding error in a few words, with the key path where it went wrong.
    private static func describe(_ error: Error) -> String {
        switch error as? DecodingError {
        case .dataCorrupted(let context), .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context):
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            return path.isEmpty ? context.debugDescription : "\(path): \(context.debugDescription)"
        default:
            return "\(error)"
        }
    }

    private struct Envelope: Decodable {
        var response: Response
        enum CodingKeys: String, CodingKey { case response = "subsonic-response" }
    }

    private struct Response: Decodable {
        var status: String?
        var version: String?
        var error: APIError?
        var artists: Indexed?
        var indexes: Indexed?
        var artist: Contents?
        var album: Contents?
        var directory: Contents?
    }

    private struct APIError: Decodable {
        var code: Int?
        var message: String?
    }

    private struct Indexed: Decodable {
        var index: [Index]?
        var child: [SubsonicItem]?
    }

    private struct Index: Decodable {
        var artist: [SubsonicItem]?
    }

    private struct Contents: Decodable {
        var album: [SubsonicItem]?
        var song: [SubsonicItem]?
        var child: [SubsonicItem]?
    }
}

/// One artist, album, song or folder child as the API describes it: only what the mount shows.
public struct SubsonicItem: Sendable, Equatable, Decodable {
    public var id: String
    /// An artist's or album's `name`; a song's or folder child's `title`.
    public var name: String?
    public var title: String?
    public var isDir: Bool?
    public var year: Int?
    public var track: Int?
    public var discNumber: Int?
    /// The original file's exact size and extension.
    public var size: UInt64?
    public var suffix: String?
    /// The file's path on the server, relative to its music folder (folder layout names).
    public var path: String?
    /// `2026-12-01T21:44:16` (Supysonic, the server's time without a zone) or with a zone.
    public var created: String?

    public init(id: String, name: String? = nil, title: String? = nil, isDir: Bool? = nil, year: Int? = nil,
                track: Int? = nil, discNumber: Int? = nil, size: UInt64? = nil, suffix: String? = nil,
                path: String? = nil, created: String? = nil) {
        self.id = id
        self.name = name
        self.title = title
        self.isDir = isDir
        self.year = year
        self.track = track
        self.discNumber = discNumber
        self.size = size
        self.suffix = suffix
        self.path = path
        self.created = created
    }

    enum CodingKeys: String, CodingKey {
        case id, name, title, isDir, year, track, discNumber, size, suffix, path, created
    }

    public init(from decoder: Decoder) throws {
        let values = try decoder.container(keyedBy: CodingKeys.self)
        // Ids are strings in the API; some servers write numbers.
        if let text = try? values.decode(String.self, forKey: .id) {
            id = text
        } else {
            id = String(try values.decode(Int64.self, forKey: .id))
        }
        name = try? values.decodeIfPresent(String.self, forKey: .name)
        title = try? values.decodeIfPresent(String.self, forKey: .title)
        isDir = try? values.decodeIfPresent(Bool.self, forKey: .isDir)
        year = try? values.decodeIfPresent(Int.self, forKey: .year)
        track = try? values.decodeIfPresent(Int.self, forKey: .track)
        discNumber = try? values.decodeIfPresent(Int.self, forKey: .discNumber)
        size = try? values.decodeIfPresent(UInt64.self, forKey: .size)
        suffix = try? values.decodeIfPresent(String.self, forKey: .suffix)
        path = try? values.decodeIfPresent(String.self, forKey: .path)
        created = try? values.decodeIfPresent(String.self, forKey: .created)
    }

    /// An artist of `getIndexes` is a folder (`getMusicDirectory` lists it).
    func asDirectory() -> SubsonicItem {
        var folder = self
        folder.isDir = true
        return folder
    }

    /// `created` as a date: with its zone where it states one, else read as UTC (`ISO8601Timestamp`).
    public var createdDate: Date? {
        created.flatMap { ISO8601Timestamp.parse($0)?.date }
    }
}

/// A Subsonic API version, `major.minor.patch`.
public struct SubsonicVersion: Sendable, Equatable, Comparable, CustomStringConvertible {
    public var parts: [Int]

    public init?(_ text: String) {
        let parts = text.split(separator: ".").map { Int($0) }
        guard (1...4).contains(parts.count), text.count <= 20, parts.allSatisfy({ $0 != nil }) else { return nil }
        self.parts = parts.map { $0! }
    }

    public static func < (lhs: SubsonicVersion, rhs: SubsonicVersion) -> Bool {
        for index in 0..<max(lhs.parts.count, rhs.parts.count) {
            let left = index < lhs.parts.count ? lhs.parts[index] : 0
            let right = index < rhs.parts.count ? rhs.parts[index] : 0
            if left != right { return left < right }
        }
        return false
    }

    /// The first version that takes token sign-in.
    public static let tokenSignIn = SubsonicVersion("1.13.0")!

    public var description: String { parts.map(String.init).joined(separator: ".") }
}

/// An error the API returned (`status: failed`), explained for a mount error.
public struct SubsonicAPIError: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: Int
    public var message: String
    public var serverVersion: SubsonicVersion?

    public var description: String {
        let said = message.isEmpty ? "" : " (\(DisplayText.quoted(String(message.prefix(200)))))"
        let meaning = switch code {
        case 10: "a required parameter is missing"
        case 20: "the server's API is newer than this client speaks; upgrade rangefs"
        case 30: "the server's API is too old for this client; upgrade the server"
        case 40: "wrong user name or password"
        case 41: "the server does not take token sign-in for this user"
        case 50: "the user is not allowed to do this"
        case 60: "the server's trial period is over"
        case 70: "not found"
        default: "the server failed: error \(code)"
        }
        return "Subsonic error \(code): \(meaning)\(said)"
    }
}

/// Why a reply could not be used.
public enum SubsonicReplyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The server answered `status: failed`.
    case api(SubsonicAPIError)
    /// Not a reply the mount can read.
    case unreadable(String)

    public var description: String {
        switch self {
        case .api(let error): "\(error)"
        case .unreadable(let reason): reason
        }
    }
}
