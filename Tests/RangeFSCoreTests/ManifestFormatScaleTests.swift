import Foundation
import Testing
@testable import RangeFSCore

// Large manifests in every format parse without quadratic work. The playlist repeats
// one title throughout: naming each entry by retrying every earlier suffix would take
// minutes here.

private let count = 5_000

@Test func fiveThousandEntriesInEveryFormat() throws {
    let json = "[\n" + (0..<count).map { "{\"path\": \"show\($0 / 1000)/episode \($0).mp3\", \"url\": \"https://h/\($0).mp3\", \"size\": \($0)}" }
        .joined(separator: ",\n") + "\n]"
    let yaml = (0..<count).map { "- path: show\($0 / 1000)/episode \($0).mp3\n  url: https://h/\($0).mp3\n  size: \($0)" }
        .joined(separator: "\n")
    let m3u = "#EXTM3U\n" + (0..<count).map { "#EXTINF:1,Same title\nhttps://h/\($0).mp3" }.joined(separator: "\n")
    let rss = "<rss><channel>\n" + (0..<count).map {
        "<item><title>Episode \($0)</title><pubDate>Tue, 01 Oct 2024 08:00:00 GMT</pubDate><enclosure url=\"https://h/\($0).mp3\" length=\"\($0 + 1)\"/></item>"
    }.joined(separator: "\n") + "\n</channel></rss>"

    let metalink = "<metalink xmlns=\"urn:ietf:params:xml:ns:metalink\">\n" + (0..<count).map {
        "<file name=\"show\($0 / 1000)/episode \($0).mp3\"><size>\($0)</size><url priority=\"2\">https://mirror/\($0).mp3</url><url priority=\"1\">https://h/\($0).mp3</url></file>"
    }.joined(separator: "\n") + "\n</metalink>"

    let plain = (0..<count).map { "show\($0 / 1000)/episode \($0).mp3\thttps://h/\($0).mp3" }.joined(separator: "\n")
    for (source, text) in [("big.txt", plain), ("big.json", json), ("big.yaml", yaml), ("big.m3u", m3u), ("big.rss", rss), ("big.meta4", metalink)] {
        let manifest = try Manifest.parse(text, source: source)
        #expect(manifest.entries.count == count, "\(source)")
        #expect(manifest.entries.last?.url.absoluteString == "https://h/\(count - 1).mp3", "\(source)")
        if source == "big.meta4" {
            #expect(manifest.entries.last?.mirrors.map(\.absoluteString) == ["https://mirror/\(count - 1).mp3"])
        }
        if source == "big.m3u" {
            #expect(manifest.entries.last?.path.description == "Same title (\(count)).mp3")
        }
    }
}
