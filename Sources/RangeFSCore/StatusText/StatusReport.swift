import Foundation

/// `rangefs status` as text: one aligned row per file, then a totals line.
///
///     music/a.mp3  complete  40.0 MiB / 40.0 MiB  [####################] 100%
///     music/b.mp3  partial   12.5 MiB / 40.0 MiB  [######--------------]  31%  1.2 MiB/s
///     total: 1/2 complete, 52.5 MiB / 80.0 MiB (65%), 1.2 MiB/s, paused; cache 52.5 MiB, 3.1 GiB free (floor 4.0 GiB)
///
/// Columns are counted in characters; wide (East Asian) characters in paths can shift a row.
public enum StatusReport {
    public static let barWidth = 20
    /// Long paths are shortened to fit a terminal, but never below this.
    static let minimumPathWidth = 12
    /// The state column is at least as wide as "complete".
    static let minimumStateWidth = 8

    /// The table and the totals line. With a `width` (terminal columns), long paths are
    /// shortened in the middle and anything still too long is cut; nil leaves lines whole.
    public static func lines(_ status: MountStatus, width: Int? = nil) -> [String] {
        let rows = status.files.map(Row.init)
        let presentWidth = rows.map(\.present.count).max() ?? 0
        let totalWidth = rows.map(\.total.count).max() ?? 0
        let rateWidth = rows.map(\.rate.count).max() ?? 0
        let stateWidth = max(minimumStateWidth, rows.map(\.state.count).max() ?? 0)
        let longestPath = rows.map(\.path.count).max() ?? 0
        // Everything after the path column: state, bytes, bar, percent and rate, with separators.
        let fixedWidth = 2 + stateWidth + 2 + presentWidth + 3 + totalWidth + 2 + (barWidth + 2) + 1 + 4
            + (rateWidth > 0 ? 2 + rateWidth : 0)
        var pathWidth = longestPath
        if let width {
            pathWidth = min(longestPath, max(min(minimumPathWidth, longestPath), width - fixedWidth))
        }

        var lines = zip(rows, status.files).flatMap { row, file -> [String] in
            var line = pad(truncatingMiddle(row.path, to: pathWidth), to: pathWidth)
            line += "  " + pad(row.state, to: stateWidth)
            line += "  " + padLeft(row.present, to: presentWidth) + " / " + padLeft(row.total, to: totalWidth)
            line += "  " + row.bar + " " + padLeft(row.percent, to: 4)
            // A failed file moves nothing, so its reason takes the rate's place.
            if let note = row.note {
                line += "  " + note
            } else if rateWidth > 0 {
                line += "  " + padLeft(row.rate, to: rateWidth)
            }
            // A file with mirrors: one indented line per source below its row.
            return [line] + (file.sources ?? []).map { "    " + StatusText.sanitized($0.summary) }
        }
        lines.append(totalsLine(status))
        return lines.map { line in
            let trimmed = String(line.reversed().drop { $0 == " " }.reversed())
            guard let width, trimmed.count > width else { return trimmed }
            return String(trimmed.prefix(max(0, width - 1))) + "…"
        }
    }

    /// At most `height` lines for a screen that cannot scroll: the first file rows that fit, a
    /// line saying how many more there are, and always the totals line (the last of `lines`).
    public static func fitted(_ lines: [String], height: Int) -> [String] {
        guard lines.count > height else { return lines }
        guard height >= 3 else { return Array(lines.suffix(max(0, height))) }
        let fileRows = lines.dropLast()
        let shown = height - 2
        // At least two rows are hidden: replacing a single row with this line would gain nothing.
        return Array(fileRows.prefix(shown)) + ["… \(fileRows.count - shown) more files", lines[lines.count - 1]]
    }

    /// `total: 1/4 complete, 1 failed, 1 waiting for space, 52.5 MiB / 90.0 MiB (58%), 1.2 MiB/s, paused;
    /// cache 52.5 MiB (max 1.0 GiB), 3.1 GiB free (floor 4.0 GiB)`.
    public static func totalsLine(_ status: MountStatus) -> String {
        let complete = status.files.filter { $0.state == .complete }.count
        let failed = status.files.filter { $0.state == .failed }.count
        let waiting = status.files.filter { $0.state == .waitingForSpace }.count
        let unknownSizes = status.files.filter { $0.size == nil }.count
        var parts = ["\(complete)/\(status.files.count) complete"]
        if failed > 0 { parts.append("\(failed) failed") }
        if waiting > 0 { parts.append("\(waiting) waiting for space") }
        var bytes = HumanBytes.format(status.cachedBytes) + " / " + HumanBytes.format(status.totalBytes)
        if unknownSizes == 0, status.totalBytes > 0 {
            bytes += " (\(percent(status.cachedBytes, of: status.totalBytes))%)"
        }
        parts.append(bytes)
        if unknownSizes > 0 { parts.append(unknownSizes == 1 ? "1 size unknown" : "\(unknownSizes) sizes unknown") }
        if status.bytesPerSecond > 0 { parts.append(HumanBytes.rate(status.bytesPerSecond)) }
        if status.paused { parts.append("paused") }
        let cache = status.cache.map { "; " + cacheText($0) } ?? ""
        return "total: " + parts.joined(separator: ", ") + cache
    }

    /// `cache 52.5 MiB (max 1.0 GiB), 3.1 GiB free (floor 4.0 GiB), 12.0 MiB read without storing`.
    static func cacheText(_ cache: CacheSpaceStatus) -> String {
        var text = "cache " + HumanBytes.format(cache.cachedBytes)
        if let max = cache.maxBytes { text += " (max \(HumanBytes.format(max)))" }
        text += ", " + (cache.freeBytes.map(HumanBytes.format) ?? "?") + " free (floor \(HumanBytes.format(cache.minFreeBytes)))"
        if cache.readThroughBytes > 0 { text += ", \(HumanBytes.format(cache.readThroughBytes)) read without storing" }
        return text
    }

    /// The status for scripts: pretty, with sorted keys so that output diffs cleanly.
    public static func json(_ status: MountStatus) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(status) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whole percent, rounded down, so 100% means every byte; an empty file is complete.
    static func percent(_ cached: UInt64, of size: UInt64) -> Int {
        fraction(cached, of: size, scale: 100)
    }

    /// `[#########-----------]`; empty when the size is unknown.
    static func bar(_ cached: UInt64, of size: UInt64?) -> String {
        let filled = size.map { fraction(cached, of: $0, scale: UInt64(barWidth)) } ?? 0
        return "[" + String(repeating: "#", count: filled) + String(repeating: "-", count: barWidth - filled) + "]"
    }

    /// `cached * scale / size` rounded down, exact for any sizes (no overflow, no floating point).
    private static func fraction(_ cached: UInt64, of size: UInt64, scale: UInt64) -> Int {
        guard size > 0 else { return Int(scale) }
        return Int(size.dividingFullWidth(scale.multipliedFullWidth(by: min(cached, size))).quotient)
    }

    static func truncatingMiddle(_ text: String, to width: Int) -> String {
        guard text.count > width else { return text }
        guard width > 1 else { return String(text.prefix(width)) }
        // Keep both ends: the top directory says which collection, the end says which file.
        let kept = width - 1
        let head = kept / 3
        return String(text.prefix(head)) + "…" + String(text.suffix(kept - head))
    }

    private static func pad(_ text: String, to width: Int) -> String {
        text.count >= width ? text : text + String(repeating: " ", count: width - text.count)
    }

    private static func padLeft(_ text: String, to width: Int) -> String {
        text.count >= width ? text : String(repeating: " ", count: width - text.count) + text
    }

    /// One file's cells, already as text.
    private struct Row {
        var path: String
        var state: String
        var present: String
        var total: String
        var bar: String
        var percent: String
        var rate: String
        var note: String?

        init(_ file: FileStatus) {
            path = StatusText.sanitized(file.path)
            state = file.state.rawValue
            present = HumanBytes.format(file.cachedBytes)
            total = file.size.map(HumanBytes.format) ?? "?"
            bar = StatusReport.bar(file.cachedBytes, of: file.size)
            percent = file.size.map { "\(StatusReport.percent(file.cachedBytes, of: $0))%" } ?? "?"
            rate = HumanBytes.rate(file.bytesPerSecond)
            note = file.state == .failed ? StatusText.sanitized(file.failure ?? "unknown error") : nil
        }
    }
}

/// Text from outside (paths, server messages) made safe for one terminal line.
enum StatusText {
    /// Control characters written as `\x0A`, so a newline or escape cannot break the table or
    /// the terminal; with a `limit`, longer text is cut and marked with `…`.
    static func sanitized(_ text: String, limit: Int? = nil) -> String {
        var shown = ""
        for scalar in text.unicodeScalars {
            if DisplayText.isControl(scalar) || (0x80...0x9F).contains(scalar.value) {
                shown += "\\x" + DisplayText.hex(scalar).dropFirst(2)
            } else {
                shown.unicodeScalars.append(scalar)
            }
        }
        if let limit, shown.count > limit {
            return String(shown.prefix(max(0, limit - 1))) + "…"
        }
        return shown
    }
}
