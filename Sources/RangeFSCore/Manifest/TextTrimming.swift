/// Trimming without Foundation, whose `trimmingCharacters(in:)` bridges through NSString
/// and costs more than the rest of parsing a playlist line or a feed attribute.
enum TextTrimming {
    /// Without surrounding ASCII white space (space, tab, CR, LF, VT, FF).
    static func trimmed(_ text: some StringProtocol) -> Substring {
        let text = Substring(text)
        let bytes = text.utf8
        guard let first = bytes.firstIndex(where: { !ASCII.isWhitespace($0) }),
              let last = bytes.lastIndex(where: { !ASCII.isWhitespace($0) })
        else { return text[text.endIndex...] }
        // Both ends are ASCII bytes, so they are character boundaries.
        return Substring(bytes[first...last])
    }
}
