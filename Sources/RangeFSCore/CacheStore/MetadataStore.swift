import Foundation
import GRDB

/// Where a file stands in the cache.
public enum CacheState: String, Sendable, Codable {
    /// Known to the manifest, no byte cached.
    case remote
    /// Some blocks cached.
    case partial
    /// Every block cached and synced; served from local disk alone.
    case complete
    /// The last attempt failed; the reason is kept.
    case failed
    /// Background work stopped at the cache's limits (the free-space floor or the size
    /// limit) and goes on by itself once there is room. Never stored in the database.
    case waitingForSpace = "waiting for space"
}

/// What the cache remembers about one remote file, keyed by its URL's `CacheKey`.
public struct CachedFileRecord: Sendable, Equatable, Codable, FetchableRecord, PersistableRecord {
    public static let databaseTableName = "cached_file"

    /// The file's `CacheKey`: its URL, or for a URL with a secret the redacted URL and a digest.
    public var url: String
    /// File name under `data/` (a hash of the URL).
    public var dataName: String
    public var size: UInt64
    public var etag: String?
    public var lastModified: String?
    /// `lastModified` may go in `If-Range` (`RemoteValidator.lastModifiedIsStrong`).
    public var lastModifiedIsStrong: Bool
    /// `Last-Modified` as seconds since 1970, for the file's mtime.
    public var modified: Double?
    public var blockSize: UInt64
    /// Durable blocks (`BlockBitmap.serialized`).
    public var bitmap: Data
    public var state: CacheState
    public var failure: String?
    public var lastAccess: Double
    /// Kept whatever the size limit (`rangefs pin`).
    public var pinned: Bool
    /// Where a redirect of `url` led when the validator was taken (nil: `url` answered itself).
    public var location: String?

    public var validator: RemoteValidator {
        RemoteValidator(etag: etag, lastModified: lastModified, lastModifiedIsStrong: lastModifiedIsStrong)
    }

    public var source: FetchSource {
        FetchSource(location: location.flatMap { URL(string: $0) }, validator: validator)
    }
}

/// The cache's SQLite database. Every write is a durable transaction (WAL, synchronous=FULL):
/// a bitmap committed here is on disk, and it is only committed after its data was synced.
public final class MetadataStore: Sendable {
    private let database: DatabaseQueue

    public init(path: String) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL")
            // What a key or a location held before it was rewritten (`v7-secret-free-keys`)
            // does not stay behind in free pages.
            try db.execute(sql: "PRAGMA secure_delete = ON")
        }
        do {
            database = try DatabaseQueue(path: path, configuration: configuration)
            try database.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = WAL")
            }
            try Self.migrator.migrate(database)
            // A migration's rewrites reach the database file now, not at some later checkpoint:
            // until then the file keeps the pages as they were (`v7-secret-free-keys`).
            try database.writeWithoutTransaction { db in _ = try db.checkpoint(.truncate) }
        } catch {
            throw CacheError("cannot open cache database \(path): \(error)")
        }
        chmod(path, 0o600)
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.create(table: CachedFileRecord.databaseTableName) { table in
                table.column("url", .text).primaryKey()
                table.column("dataName", .text).notNull()
                table.column("size", .integer).notNull()
                table.column("etag", .text)
                table.column("lastModified", .text)
                table.column("modified", .double)
                table.column("blockSize", .integer).notNull()
                table.column("bitmap", .blob).notNull()
                table.column("state", .text).notNull()
                table.column("failure", .text)
                table.column("lastAccess", .double).notNull()
            }
        }
        migrator.registerMigration("v2-settings") { db in
            try db.create(table: "setting") { table in
                table.column("key", .text).primaryKey()
                table.column("value", .text).notNull()
            }
        }
        migrator.registerMigration("v3-pinned") { db in
            try db.alter(table: CachedFileRecord.databaseTableName) { table in
                table.add(column: "pinned", .boolean).notNull().defaults(to: false)
            }
        }
        migrator.registerMigration("v4-location") { db in
            try db.alter(table: CachedFileRecord.databaseTableName) { table in
                table.add(column: "location", .text)
            }
        }
        migrator.registerMigration("v5-listings") { db in
            try db.create(table: "listing") { table in
                table.column("url", .text).primaryKey()
                // A `StoredListing` as JSON: read and written whole, never queried inside.
                table.column("listing", .blob).notNull()
            }
        }
        migrator.registerMigration("v6-head-tail-sizes") { db in
            try db.create(table: "head_tail_size") { table in
                table.column("fileType", .text).primaryKey()
                table.column("head", .integer).notNull()
                table.column("tail", .integer).notNull()
            }
        }
        migrator.registerMigration("v7-secret-free-keys") { db in
            // Keys were URLs as given, a password or a query token with them: each becomes its
            // `CacheKey`, and a location with a secret goes (the redirect leads there again).
            for row in try Row.fetchAll(db, sql: "SELECT url, location FROM cached_file") {
                let url: String = row["url"]
                let location: String? = row["location"]
                let key = CacheKey.of(url)
                let kept = location.flatMap { CacheKey.of($0) == $0 ? $0 : nil }
                guard key != url || kept != location else { continue }
                // An old failure's text may quote the URL as it was.
                let failure = key != url ? "SET failure = NULL, " : "SET "
                try db.execute(sql: "UPDATE cached_file \(failure)url = ?, location = ? WHERE url = ?", arguments: [key, kept, url])
            }
            for url in try String.fetchAll(db, sql: "SELECT url FROM listing") where CacheKey.of(url) != url {
                try db.execute(sql: "UPDATE listing SET url = ? WHERE url = ?", arguments: [CacheKey.of(url), url])
            }
        }
        migrator.registerMigration("v7-strong-dates") { db in
            // Records from before it send no date in If-Range: whether theirs was strong is not known.
            try db.alter(table: CachedFileRecord.databaseTableName) { table in
                table.add(column: "lastModifiedIsStrong", .boolean).notNull().defaults(to: false)
            }
        }
        return migrator
    }

    /// A mount-wide setting that survives remounts (e.g. whether prefetching is paused).
    public func setting(_ key: String) throws -> String? {
        try database.read { db in
            try String.fetchOne(db, sql: "SELECT value FROM setting WHERE key = ?", arguments: [key])
        }
    }

    public func setSetting(_ key: String, to value: String) throws {
        try database.write { db in
            try db.execute(sql: "INSERT INTO setting(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                           arguments: [key, value])
        }
    }

    /// The head and tail sizes learned per file type (`LearnedHeadTails`), read once at mount time.
    func learnedHeadTails() throws -> [String: HeadTailSizes] {
        let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT fileType, head, tail FROM head_tail_size") }
        var sizes: [String: HeadTailSizes] = [:]
        for row in rows {
            let type: String = row["fileType"]
            let head: Int64 = row["head"]
            let tail: Int64 = row["tail"]
            sizes[type] = HeadTailSizes(head: UInt64(max(0, head)), tail: UInt64(max(0, tail)))
        }
        return sizes
    }

    /// Keeps the head and tail sizes learned for these file types, in one transaction.
    func saveLearnedHeadTails(_ sizes: [String: HeadTailSizes]) throws {
        try database.write { db in
            for (type, size) in sizes {
                try db.execute(sql: """
                    INSERT INTO head_tail_size(fileType, head, tail) VALUES(?, ?, ?)
                    ON CONFLICT(fileType) DO UPDATE SET head = excluded.head, tail = excluded.tail
                    """, arguments: [type, Int64(size.head), Int64(size.tail)])
            }
        }
    }

    /// Keeps a directory's listing (by its URL) for the next mount.
    public func saveListing(_ listing: StoredListing, url: String) throws {
        let data = try JSONEncoder().encode(listing)
        try database.write { db in
            try db.execute(sql: "INSERT INTO listing(url, listing) VALUES(?, ?) ON CONFLICT(url) DO UPDATE SET listing = excluded.listing",
                           arguments: [url, data])
        }
    }

    /// Every kept listing, by directory URL, read once at mount time. One that cannot be read
    /// (written by another version) is left out: its directory is listed again.
    public func allListings() throws -> [String: StoredListing] {
        let rows = try database.read { db in try Row.fetchAll(db, sql: "SELECT url, listing FROM listing") }
        var listings: [String: StoredListing] = [:]
        let decoder = JSONDecoder()
        for row in rows {
            let url: String = row["url"]
            let data: Data = row["listing"]
            if let listing = try? decoder.decode(StoredListing.self, from: data) { listings[url] = listing }
        }
        return listings
    }

    /// Every record, read once at mount time.
    public func allRecords() throws -> [String: CachedFileRecord] {
        let records = try database.read { db in try CachedFileRecord.fetchAll(db) }
        return Dictionary(records.map { ($0.url, $0) }, uniquingKeysWith: { first, _ in first })
    }

    public func save(_ record: CachedFileRecord) throws {
        try database.write { db in try record.save(db) }
    }

    /// Saves many records in one transaction (one sync instead of one per record).
    public func save(_ records: [CachedFileRecord]) throws {
        try database.write { db in
            for record in records { try record.save(db) }
        }
    }

    /// Commits the durable blocks and state of one file.
    public func commitBlocks(url: String, bitmap: [UInt8], state: CacheState) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cached_file SET bitmap = ?, state = ?, failure = NULL WHERE url = ?",
                           arguments: [Data(bitmap), state.rawValue, url])
        }
    }

    /// An evicted file that was not loaded: no blocks, and a new data file name, so the removed
    /// files' names are never used again.
    public func emptyBlocks(url: String, bitmap: [UInt8], state: CacheState, dataName: String) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cached_file SET bitmap = ?, state = ?, dataName = ?, failure = NULL WHERE url = ?",
                           arguments: [Data(bitmap), state.rawValue, dataName, url])
        }
    }

    /// Files holding cached data that may be evicted, the first to go first: partial before
    /// complete, then least recently used.
    public func evictionCandidates() throws -> [CachedFileRecord] {
        try database.read { db in
            try CachedFileRecord.fetchAll(db, sql: """
                SELECT * FROM cached_file WHERE pinned = 0 AND state IN ('partial', 'complete')
                ORDER BY state = 'complete', lastAccess
                """)
        }
    }

    /// Remembers where the file's ranges are fetched from now (another mirror behind its URL).
    public func updateSource(url: String, _ source: FetchSource) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cached_file SET location = ?, etag = ?, lastModified = ?, lastModifiedIsStrong = ? WHERE url = ?",
                           arguments: [CacheKey.storableLocation(source.location), source.validator.etag,
                                       source.validator.lastModified, source.validator.lastModifiedIsStrong, url])
        }
    }

    public func setPinned(url: String, _ pinned: Bool) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cached_file SET pinned = ? WHERE url = ?", arguments: [pinned, url])
        }
    }

    /// Forgets a file; returns the name of its data file, if it had one.
    public func remove(url: String) throws -> String? {
        try database.write { db in
            let name = try String.fetchOne(db, sql: "SELECT dataName FROM cached_file WHERE url = ?", arguments: [url])
            try db.execute(sql: "DELETE FROM cached_file WHERE url = ?", arguments: [url])
            return name
        }
    }

    public func recordFailure(url: String, reason: String?) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE cached_file SET failure = ? WHERE url = ?", arguments: [reason, url])
        }
    }

    /// Sets the last access of each file named (by its key), in one transaction.
    public func touch(_ times: [String: Date]) throws {
        try database.write { db in
            for (url, date) in times {
                try db.execute(sql: "UPDATE cached_file SET lastAccess = ? WHERE url = ?",
                               arguments: [date.timeIntervalSince1970, url])
            }
        }
    }
}
