/// Renders user-supplied text safely inside messages: control characters would
/// otherwise garble terminals and logs.
enum DisplayText {
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        scalar.value < 0x20 || scalar.value == 0x7F
    }

    static func hex(_ scalar: Unicode.Scalar) -> String {
        let digits = String(scalar.value, radix: 16, uppercase: true)
        return "0x" + String(repeating: "0", count: max(0, 2 - digits.count)) + digits
    }

    /// `'text'`, with control characters written as `\x01`.
    static func quoted(_ text: some StringProtocol) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if isControl(scalar) {
                shown += "\\x" + hex(scalar).dropFirst(2)
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        return "'" + shown + "'"
    }
}

/// The few ASCII bytes that manifest syntax is made of.
enum ASCII {
    static let tab = UInt8(ascii: "\t")
    static let newline = UInt8(ascii: "\n")
    static let carriageReturn = UInt8(ascii: "\r")
    static let space = UInt8(ascii: " ")
    static let slash = UInt8(ascii: "/")
    static let percent = UInt8(ascii: "%")

    static func isControl(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == 0x7F
    }

    /// Space, tab, vertical tab, form feed, carriage return and line feed.
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || (0x09...0x0D).contains(byte)
    }
}
