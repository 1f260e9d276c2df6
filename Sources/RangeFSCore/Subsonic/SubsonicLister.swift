import Foundation
import Logging

// A Subsonic-API music server (Navidrome, Gonic, Airsonic, Supysonic, LMS) mounted from its
// library, as a web directory is mounted from its pages:
//
// - `SubsonicAddress`: `subsonic+https://USER@HOST/` as the server's base URL, the URLs the
//   mount's directories are known by (one per artist, album or folder, below the root of the
//   layout) and the API calls that list them; a track is the API's `download` of it, the
//   original file, never a transcode.
// - `SubsonicDialect`: the credentials added to each API call as it goes out (token and salt,
//   or the hex password for servers older than API 1.13), so no URL the mount keeps, logs or
//   shows holds them. `SubsonicSignIn` asks `ping`, through the mount's own client, which form
//   the server takes.
// - `SubsonicLister` (this file): one directory's API call, its JSON reply read by
//   `SubsonicReply` (pure, capped) and named by `SubsonicLayout` (pure).
//
// Tracks are then read with ranged GETs through the one fetch path: the listed size makes the
// file at once, its first range reply names the version. Nothing else of the mount knows the
// tree came from a music server.

/// Lists one directory of a Subsonic library for a mount grown from listings
/// (`ListedDirectories`): the API call that lists it (`getArtists`, `getArtist`, `getAlbum`, or
/// `getIndexes`, `getMusicDirectory`), read off the thread that runs every transfer. A reply
/// carries no validator: a listing is always asked in full.
public struct SubsonicLister: DirectoryLister {
    private let download: ListingDownload
    private let address: SubsonicAddress
    /// Replies are read one at a time, for the reason `WebDirectoryLister` reads its pages so.
    private let reading = DispatchQueue(label: "rangefs.subsonic-listings")

    public init(_ download: ListingDownload, address: SubsonicAddress) {
        self.download = download
        self.address = address
    }

    public func list(_ url: URL, heldVersion: RemoteValidator?,
                     completion: @escaping @Sendable (Result<ListingAnswer, FetchError>) -> Void) {
        guard let directory = address.directory(of: url) else {
            return completion(.failure(FetchError(url, .unreadableListing("not a directory of \(address.displayName)"))))
        }
        download.fetch(address.apiURL(listing: directory)) { [download, address, reading] result in
            let document: FetchedDocument
            switch result {
            case .success(let fetched): document = fetched
            case .failure(let error): return completion(.failure(FetchError(url, .remote(error))))
            }
            reading.async {
                do throws(SubsonicReplyError) {
                    let reply = try SubsonicReply.parse(document.bytes, maxItems: download.maxEntries)
                    let entries = SubsonicLayout.entries(of: directory, items: reply.items, address: address)
                    completion(.success(.listed(entries, nil, from: url, serverTime: document.reply.serverTime)))
                } catch {
                    // Asking again brings the same reply: not a transient failure.
                    completion(.failure(FetchError(url, .unreadableListing("\(error)"))))
                }
            }
        }
    }
}
