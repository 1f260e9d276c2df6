/// Makes free text, such as a playlist title, safe as one file name: no "/", no control
/// characters, no line breaks, never hidden and never "." or "..".
enum FileNameText {
    /// Replaces "/", which would split the name into directories.
    static let slashReplacement: Character = "-"

    /// The text as a file name, or nil when nothing usable is left.
    static func sanitized(_ text: some StringProtocol) -> String? {
        var result = ""
        var pendingSpace = false
        for scalar in text.unicodeScalars {
            // Titles in feeds are often indented or wrapped over lines: every run of
            // whitespace or control characters becomes one space.
            if scalar.isASCII ? ASCII.isWhitespace(UInt8(scalar.value)) || DisplayText.isControl(scalar)
                              : isControl(scalar) || scalar.properties.isWhitespace {
                pendingSpace = !result.isEmpty
                continue
            }
            if pendingSpace {
                result.append(" ")
                pendingSpace = false
            }
            if scalar == "/" {
                result.append(slashReplacement)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        // A leading dot would hide the file from `ls` (and "." and ".." are not names at all).
        let visible = result.drop(while: { $0 == "." || $0 == " " })
        return visible.isEmpty ? nil : String(visible)
    }

    /// C0, DEL and C1 controls.
    private static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        DisplayText.isControl(scalar) || (0x80...0x9F).contains(scalar.value)
    }

    /// The longest prefix of `text` that fits in `maxBytes` of UTF-8, cut between
    /// characters so no accent is separated from its letter.
    static func truncated(_ text: String, toUTF8Bytes maxBytes: Int) -> String {
        guard text.utf8.count > maxBytes else { return text }
        var result = ""
        var used = 0
        for character in text {
            let size = character.utf8.count
            if used + size > maxBytes { break }
            result.append(character)
            used += size
        }
        if result.isEmpty {
            // A single character longer than the limit (a pile of combining marks): cut between scalars.
            for scalar in text.unicodeScalars {
                let size = UTF8.width(scalar)
                if used + size > maxBytes { break }
                result.unicodeScalars.append(scalar)
                used += size
            }
        }
        while result.last == " " { result.removeLast() }
        return result
    }
}

/// A file name split for suffixing: `Title (2).mp3` keeps its extension last.
struct FileNameParts: Sendable, Equatable {
    var stem: String
    /// Without the dot.
    var fileExtension: String?

    /// A title with the extension taken from the file it names. A title that already
    /// ends with that extension (`track.mp3`) does not get it twice.
    init(title: String, fileExtension: String?) {
        if let fileExtension, title.count > fileExtension.count + 1,
           title.lowercased().hasSuffix("." + fileExtension.lowercased()) {
            stem = String(title.dropLast(fileExtension.count + 1))
        } else {
            stem = title
        }
        self.fileExtension = fileExtension
    }

    /// A file name as it is, split at its extension when it has a plausible one.
    init(fileName: String) {
        if let fileExtension = Self.plausibleExtension(of: fileName) {
            stem = String(fileName.dropLast(fileExtension.count + 1))
            self.fileExtension = fileExtension
        } else {
            stem = fileName
            fileExtension = nil
        }
    }

    /// `mp3` in `episode-01.mp3`; nil for `README`, `.profile` or `v1.0 final`.
    /// Short and alphanumeric, so that a title with a dot is not mistaken for one.
    static func plausibleExtension(of fileName: String) -> String? {
        guard let dot = fileName.lastIndex(of: "."), dot != fileName.startIndex else { return nil }
        let candidate = fileName[fileName.index(after: dot)...]
        guard (1...10).contains(candidate.utf8.count),
              candidate.unicodeScalars.allSatisfy({ $0.isASCII && $0.properties.isAlphabetic || ("0"..."9").contains($0) }),
              candidate.unicodeScalars.contains(where: { !("0"..."9").contains($0) })  // "1.5" is a number, not a file type
        else { return nil }
        return String(candidate)
    }
}
