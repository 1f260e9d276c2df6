import Foundation

/// One of the AWS CLI's shared files (`~/.aws/credentials`, `~/.aws/config`): INI sections of
/// `key = value` lines. Keys are lowercased, as the AWS CLI reads them; comments start with
/// `#` or `;`; indented lines under a key (the config file's nested `s3 =` settings) belong to
/// that key and are not read as keys of their own.
struct AWSProfileFile: Sendable, Equatable {
    /// Section name as written between the brackets (`default`, `profile media`) → its keys.
    var sections: [String: [String: String]]

    /// The file at `url`, or nil if there is none. Any other failure to read it, or a line that
    /// is neither a section, a key, a comment nor blank, is an error naming the file (and line).
    static func read(_ url: URL) throws(AWSSettingsError) -> AWSProfileFile? {
        guard FileManager.default.fileExists(atPath: url.path) else { return nil }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw AWSSettingsError("cannot read \(url.path): \(Self.reason(error))")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw AWSSettingsError("cannot read \(url.path): not UTF-8 text")
        }
        return try parse(text, path: url.path)
    }

    static func parse(_ text: String, path: String) throws(AWSSettingsError) -> AWSProfileFile {
        var sections: [String: [String: String]] = [:]
        var section: String?
        var lastKeyTakesNestedLines = false
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let isIndented = rawLine.first == " " || rawLine.first == "\t"
            let line = rawLine.trimmingCharacters(in: .whitespacesAndNewlines)
            if line.isEmpty || line.hasPrefix("#") || line.hasPrefix(";") { continue }
            if isIndented && lastKeyTakesNestedLines { continue }
            if line.hasPrefix("[") {
                guard line.hasSuffix("]"), line.count > 2 else {
                    throw AWSSettingsError("\(path):\(index + 1): a section header must be [name]: \(line)")
                }
                let name = line.dropFirst().dropLast().trimmingCharacters(in: .whitespaces)
                section = name
                if sections[name] == nil { sections[name] = [:] } // a repeated section adds to the first
                lastKeyTakesNestedLines = false
                continue
            }
            guard let equals = line.firstIndex(of: "="),
                  case let key = line[..<equals].trimmingCharacters(in: .whitespaces).lowercased(), !key.isEmpty
            else {
                throw AWSSettingsError("\(path):\(index + 1): expected [section] or key = value")
            }
            guard let current = section else {
                throw AWSSettingsError("\(path):\(index + 1): '\(key)' comes before any [section]")
            }
            let value = line[line.index(after: equals)...].trimmingCharacters(in: .whitespaces)
            sections[current]![key] = value
            lastKeyTakesNestedLines = value.isEmpty
        }
        return AWSProfileFile(sections: sections)
    }

    /// `Is a directory`, `Permission denied`: the system's words, not Foundation's wrapper.
    private static func reason(_ error: any Error) -> String {
        guard let underlying = (error as? CocoaError)?.userInfo[NSUnderlyingErrorKey] as? any Error else {
            return error.localizedDescription
        }
        if let posix = underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
        let bridged = underlying as NSError
        return bridged.domain == NSPOSIXErrorDomain ? String(cString: strerror(Int32(bridged.code)))
                                                    : bridged.localizedDescription
    }
}

/// A problem with the AWS settings that the user can fix, said in one sentence.
public struct AWSSettingsError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
