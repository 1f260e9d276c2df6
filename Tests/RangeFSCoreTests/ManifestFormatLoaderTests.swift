import Foundation
import RangeFSCore
import Testing

@Test func manifestLocationTellsURLsFromPaths() throws {
    #expect(try ManifestLocation(argument: "media.txt") == .file(path: "media.txt"))
    #expect(try ManifestLocation(argument: "/etc/rangefs/list.m3u") == .file(path: "/etc/rangefs/list.m3u"))
    #expect(try ManifestLocation(argument: "HTTPS://h/feed.rss") == .remote(URL(string: "HTTPS://h/feed.rss")!))
    let error = #expect(throws: ManifestError.self) { try ManifestLocation(argument: "http://user:pw@/x.m3u") }
    #expect(error?.description == "http://***@/x.m3u: not a valid http(s) URL for a manifest")
}

@Test func loaderReadsAFileInTheGivenFormatAndAddsHeaders() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("loader-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let path = dir.appendingPathComponent("list.txt").path
    try "#EXTM3U\n#EXTINF:1,Title\nhttps://h/a.mp3\n".write(toFile: path, atomically: true, encoding: .utf8)

    let detected = try ManifestLoader(location: .file(path: path)).load(client: nil)
    #expect(detected.entries.map(\.path.description) == ["a.mp3"])
    let asked = try ManifestLoader(location: .file(path: path), format: .m3u,
                                   headers: ["authorization": "Bearer x"]).load(client: nil)
    #expect(asked.entries.map(\.path.description) == ["Title.mp3"])
    #expect(asked.entries[0].headers == ["authorization": "Bearer x"])
}
