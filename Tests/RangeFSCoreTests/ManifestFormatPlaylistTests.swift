import Foundation
import Testing
@testable import RangeFSCore

// M3U playlists and RSS feeds: files named from titles, made safe, and kept unique.

private func names(_ manifest: Manifest) -> [String] {
    manifest.entries.map(\.path.description)
}

// MARK: M3U

@Test func m3uNamesFilesFromTitlesAndURLs() throws {
    let manifest = try Manifest.parse("""
        #EXTM3U
        #PLAYLIST:Mix
        #EXTINF:215,Artist - Title
        https://h/music/track01.mp3
        #EXTGRP:rock

        #EXTINF:-1 tvg-name="A, B" group-title="x",Radio, Live
        http://h/live/stream.aac?x=1
        http://h/music/My%20Song.ogg
        #EXTINF:10,Artist - Title
        http://h/other/track.mp3
        #EXTINF:10,Artist - Title
        http://h/third/track.mp3
        #EXTINF:10,AC/DC\tLive\u{7F}
        http://h/acdc.flac
        #EXTINF:10,track.MP3
        http://h/x/track.mp3
        #EXTINF:10,...hidden
        http://h/x/h.mp3
        #EXTINF:10,
        http://h/x/untitled.mp3
        #EXTINF:5,No extension
        http://h/stream
          http://h/path/with space.mp3  \r
        """, source: "mix.m3u8")
    #expect(names(manifest) == [
        "Artist - Title.mp3", "Radio, Live.aac", "My Song.ogg", "Artist - Title (2).mp3", "Artist - Title (3).mp3",
        "AC-DC Live.flac", "track.mp3", "hidden.mp3", "untitled.mp3", "No extension", "with space.mp3",
    ])
    #expect(manifest.entries.map(\.line) == [4, 8, 9, 11, 13, 15, 17, 19, 21, 23, 24])
    #expect(manifest.entries[1].url.absoluteString == "http://h/live/stream.aac?x=1")
    #expect(manifest.entries[10].url.absoluteString == "http://h/path/with%20space.mp3")
    #expect(manifest.entries.allSatisfy { $0.size == nil && $0.sha256 == nil && $0.headers.isEmpty && $0.modified == nil })
}

@Test func m3uWithoutHeaderAndWithCRLF() throws {
    let manifest = try Manifest.parse("#EXTINF:1,One\r\nhttp://h/1.mp3\r\nhttp://h/2.mp3\r\n", source: "p.m3u")
    #expect(names(manifest) == ["One.mp3", "2.mp3"])
}

@Test func m3uCollisionSuffixesAreDeterministicAndNeverClash() throws {
    let text = """
        #EXTM3U
        #EXTINF:1,A
        http://h/1.mp3
        #EXTINF:1,A
        http://h/2.mp3
        #EXTINF:1,A (2)
        http://h/3.mp3
        #EXTINF:1,a
        http://h/4.mp3
        http://h/x/A.mp3
        """
    let first = try Manifest.parse(text, source: "p.m3u")
    // "a" differs from "A" byte for byte, as Linux compares names.
    #expect(names(first) == ["A.mp3", "A (2).mp3", "A (2) (2).mp3", "a.mp3", "A (3).mp3"])
    #expect(names(try Manifest.parse(text, source: "p.m3u")) == names(first))
}

@Test func m3uLongTitlesAreCutToNameMax() throws {
    let title = String(repeating: "é", count: 300)
    let manifest = try Manifest.parse("""
        #EXTM3U
        #EXTINF:1,\(title)
        http://h/1.mp3
        #EXTINF:1,\(title)
        http://h/2.mp3
        """, source: "p.m3u")
    #expect(names(manifest) == [String(repeating: "é", count: 125) + ".mp3", String(repeating: "é", count: 123) + " (2).mp3"])
    #expect(manifest.entries.allSatisfy { $0.path.description.utf8.count <= EntryPath.maxComponentBytes })
}

@Test func m3uRelativeURLsResolveAgainstABaseURL() throws {
    let base = try #require(URL(string: "https://h/lists/mix.m3u8"))
    let manifest = try Manifest.parse("""
        #EXTM3U
        #EXTINF:1,One
        music/a b.mp3
        ../x.mp3
        //cdn.example/y.mp3
        https://other/z.mp3
        /media/w.mp3
        """, source: "mix.m3u8", baseURL: base)
    #expect(manifest.entries.map(\.url.absoluteString) == [
        "https://h/lists/music/a%20b.mp3", "https://h/x.mp3", "https://cdn.example/y.mp3", "https://other/z.mp3",
        "https://h/media/w.mp3",
    ])
    #expect(names(manifest) == ["One.mp3", "x.mp3", "y.mp3", "z.mp3", "w.mp3"])
    // The base does not relax the scheme rule.
    let error = #expect(throws: ManifestError.self) {
        try Manifest.parse("#EXTM3U\nftp://h/a.mp3\n", source: "p.m3u", baseURL: base)
    }
    #expect(error?.description == "p.m3u:2: scheme 'ftp' is not supported (only http and https)")
}

@Test(arguments: [
    ("#EXTINF:123,Artist - Title", "Artist - Title"),
    ("#EXTINF:-1,", nil),
    ("#EXTINF:5", nil),
    ("#EXTINF:-1 tvg-id=\"x\" tvg-name=\"a,b\",  Name, with comma  ", "Name, with comma"),
] as [(String, String?)])
func extinfTitles(_ line: String, _ title: String?) {
    #expect(EXTINFLine.title(of: line) == title)
}

// MARK: RSS

private let feed = """
    <?xml version="1.0" encoding="UTF-8"?>
    <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd">
    <channel>
    <title>Show</title>
    <image><title>Logo</title><url>http://h/logo.png</url></image>
    <item>
      <title>
        Episode 3:
        The   "Big" One / Part 1
      </title>
      <pubDate>Tue, 01 Oct 2024 23:30:00 -0700</pubDate>
      <enclosure url="https://h/ep3.mp3?token=abc" length="12345" type="audio/mpeg"/>
    </item>
    <item>
      <title><![CDATA[Q&A <live>]]></title>
      <pubDate>Wed, 2 Oct 24 10:00 GMT</pubDate>
      <enclosure url="https://cdn.h/media/stream?id=4" length="0" type="audio/x-m4a"/>
    </item>
    <item>
      <itunes:title>Bonus</itunes:title>
      <enclosure url="https://h/bonus.ogg" length="garbage"/>
    </item>
    <item>
      <enclosure url="https://h/files/raw-episode.mp3" length=" 42 "/>
      <pubDate>Thursday, 03 October 2024 08:00:00 EDT</pubDate>
    </item>
    <item><title>Text only</title><description>No audio.</description></item>
    <item>
      <title>Bonus</title>
      <pubDate>someday</pubDate>
      <enclosure url="https://h/bonus2.ogg"/>
    </item>
    </channel>
    </rss>
    """

@Test func rssNamesEpisodesByDateAndTitle() throws {
    let manifest = try Manifest.parse(feed, source: "show.rss")
    #expect(names(manifest) == [
        "2024-10-01 Episode 3: The \"Big\" One - Part 1.mp3",
        "2024-10-02 Q&A <live>.m4a",
        "Bonus.ogg",
        "2024-10-03 raw-episode.mp3",
        "Bonus (2).ogg",
    ])
    #expect(manifest.entries.map(\.line) == [12, 17, 21, 24, 31])
    #expect(manifest.entries.map(\.size) == [12345, nil, nil, 42, nil])
    #expect(manifest.entries[0].url.absoluteString == "https://h/ep3.mp3?token=abc")
    // The name keeps the day the feed wrote; the time is the real instant.
    #expect(manifest.entries.map(\.modified?.timeIntervalSince1970) == [1_727_850_600, 1_727_863_200, nil, 1_727_956_800, nil])
}

@Test func rssAsRealFeedsWriteIt() throws {
    // An old DOCTYPE naming an external DTD (never loaded), a stylesheet instruction, an
    // undeclared itunes: prefix, a Latin-1 declaration over what is really UTF-8 (the file
    // was read as UTF-8), a comment and a CDATA section.
    let manifest = try Manifest.parse("""
        <?xml version="1.0" encoding="ISO-8859-1" ?>
        <?xml-stylesheet type="text/xsl" href="feed.xsl"?>
        <!DOCTYPE rss PUBLIC "-//Netscape Communications//DTD RSS 0.91//EN" "http://my.netscape.com/publish/formats/rss-0.91.dtd">
        <rss version="0.91"><channel>
        <!-- episodes -->
        <item><itunes:title>Caf\u{E9} <![CDATA[<b>&]]></itunes:title><enclosure url="http://h/1.mp3"/></item>
        </channel></rss>
        """, source: "old.rss")
    #expect(names(manifest) == ["Café <b>&.mp3"])
}

@Test func rssLargerThanLibxml2sSingleChunkLimit() throws {
    // libxml2 refuses one chunk over 10 MB; the feed is fed to it as a stream.
    let notes = String(repeating: "Show notes. ", count: 1_000_000)
    let manifest = try Manifest.parse("""
        <rss><channel><item><title>Long</title><description>\(notes)</description>
        <enclosure url="http://h/1.mp3"/></item></channel></rss>
        """, source: "big.rss")
    #expect(names(manifest) == ["Long.mp3"])
    #expect(manifest.entries.map(\.line) == [2])
}

@Test func rssDetectedFromContent() throws {
    #expect(names(try Manifest.parse(feed, source: "/dev/fd/63")).count == 5)
}

// MARK: Names

@Test(arguments: [
    ("Artist - Title", "Artist - Title"),
    ("  spaced \t out\n\n title  ", "spaced out title"),
    ("AC/DC", "AC-DC"),
    ("a\u{0}b\u{1B}[31mc\u{85}d", "a b [31mc d"),
    ("..hidden", "hidden"),
    (". .", nil),
    ("..", nil),
    ("\n\t ", nil),
    ("line\u{2028}separator", "line separator"),
] as [(String, String?)])
func fileNameSanitising(_ text: String, _ expected: String?) {
    #expect(FileNameText.sanitized(text) == expected)
}

@Test func fileNameTruncationKeepsCharactersWhole() {
    #expect(FileNameText.truncated("abc", toUTF8Bytes: 10) == "abc")
    #expect(FileNameText.truncated("aé", toUTF8Bytes: 2) == "a")
    #expect(FileNameText.truncated("ab cd", toUTF8Bytes: 3) == "ab")
    // "e" plus a combining accent is one character: it is kept or dropped whole.
    #expect(FileNameText.truncated("xe\u{301}", toUTF8Bytes: 3) == "x")
    // A single character longer than the limit is cut between scalars.
    let pile = "e" + String(repeating: "\u{301}", count: 200)
    #expect(FileNameText.truncated(pile, toUTF8Bytes: 5) == "e\u{301}\u{301}")
}

@Test func fileExtensionsArePlausible() {
    #expect(FileNameParts(fileName: "episode-01.mp3") == FileNameParts(title: "episode-01", fileExtension: "mp3"))
    #expect(FileNameParts.plausibleExtension(of: "archive.tar.gz") == "gz")
    #expect(FileNameParts.plausibleExtension(of: ".profile") == nil)
    #expect(FileNameParts.plausibleExtension(of: "v1.5") == nil)
    #expect(FileNameParts.plausibleExtension(of: "Talk. Part one") == nil)
    #expect(FileNameParts.plausibleExtension(of: "README") == nil)
    #expect(FileNameParts(title: "Song.MP3", fileExtension: "mp3").stem == "Song")
    #expect(FileNameParts(title: ".mp3", fileExtension: "mp3").stem == ".mp3")
    #expect(MediaTypeExtension.fileExtension(forMediaType: "Audio/MPEG; charset=binary") == "mp3")
    #expect(MediaTypeExtension.fileExtension(forMediaType: "application/octet-stream") == nil)
}
