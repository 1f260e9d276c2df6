import Foundation
import RangeFSCore

/// Puts `StatusReport` on standard output, fitted to the terminal when there is one.
struct StatusRenderer {
    private let terminal = Terminal.size()

    /// The table, with long paths shortened to the terminal's width; piped output is not cut.
    func table(_ status: MountStatus) -> String {
        StatusReport.lines(status, width: terminal?.columns).joined(separator: "\n") + "\n"
    }

    /// One `--watch` frame. On a terminal it replaces the previous one in place: cursor home,
    /// each line cleared to its end, then the rest of the screen cleared, so nothing flickers;
    /// it is also cut to the screen's height, which cannot scroll without breaking the redraw.
    /// Piped, frames simply follow each other, separated by a blank line.
    func frame(title: String, _ body: [String]) -> String {
        guard let terminal else { return ([title] + body).joined(separator: "\n") + "\n\n" }
        // One row for the title and one for the cursor after the last line.
        let lines = [title] + StatusReport.fitted(body, height: max(1, terminal.rows - 2))
        let escape = "\u{1B}["
        return escape + "H" + lines.map { cut($0, to: terminal.columns) + escape + "K\n" }.joined() + escape + "J"
    }

    /// The lines of a frame for a status.
    func lines(_ status: MountStatus) -> [String] {
        StatusReport.lines(status, width: terminal?.columns)
    }

    private func cut(_ line: String, to width: Int) -> String {
        line.count <= width ? line : String(line.prefix(max(0, width - 1))) + "…"
    }
}

/// Standard output as a terminal.
enum Terminal {
    /// Columns and rows when standard output is a terminal; nil when it is a file or a pipe.
    static func size() -> (columns: Int, rows: Int)? {
        guard isatty(1) == 1 else { return nil }
        var size = winsize()
        guard ioctl(1, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0, size.ws_row > 0 else { return nil }
        return (Int(size.ws_col), Int(size.ws_row))
    }

    /// Writes all of `text` to standard output at once (the `print` buffer would hold a
    /// frame back, and the `stdout` global is not concurrency-safe).
    static func write(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        // Bounded: each pass writes at least one byte or stops.
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes { Foundation.write(1, $0.baseAddress! + offset, $0.count - offset) }
            if written < 0, errno == EINTR { continue }
            guard written > 0 else { return }
            offset += written
        }
    }
}
