import Foundation

/// Reads a manifest file as text, turning I/O and encoding failures into `ManifestError`s.
enum ManifestFileReader {
    static func readText(atPath path: String) throws(ManifestError) -> String {
        let data: Data
        do {
            // Reading, not mapping: the manifest may be a pipe such as `<(generate-list)`.
            data = try Data(contentsOf: URL(fileURLWithPath: path), options: [])
        } catch {
            throw ManifestError(source: path, line: 0, reason: "cannot read manifest: \(explanation(of: error, path: path))")
        }
        return try decodeText(data, source: path)
    }

    /// The manifest's bytes as text: UTF-8, or the legacy encoding a feed declares.
    /// Shared with manifests fetched over http(s).
    static func decodeText(_ data: Data, source: String) throws(ManifestError) -> String {
        if let text = String(data: data, encoding: .utf8) { return text }
        // A feed may declare a legacy encoding in its XML declaration; that is not a guess.
        if let text = DeclaredXMLEncoding.decode(data) { return text }
        let line = firstLineWithInvalidUTF8(in: data)
        throw ManifestError(source: source, line: line, reason: "not valid UTF-8 text")
    }

    private static func firstLineWithInvalidUTF8(in data: Data) -> Int {
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
        where String(data: Data(line), encoding: .utf8) == nil {
            return index + 1
        }
        return 0
    }

    /// A short reason such as "no such file" instead of Foundation's sentence naming the file again.
    private static func explanation(of error: any Error, path: String) -> String {
        var isDirectory: ObjCBool = false
        if !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) {
            return "no such file"
        }
        if isDirectory.boolValue { return "it is a directory" }
        if !FileManager.default.isReadableFile(atPath: path) { return "permission denied" }
        let nsError = error as NSError
        if let posix = nsError.userInfo[NSUnderlyingErrorKey] as? NSError, posix.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(posix.code)))
        }
        return nsError.localizedDescription
    }
}
