import Foundation

/// Waiting on a condition with a deadline: the one place the integration tests pause
/// between two looks at what they wait for.
enum Poll {
    /// Checks `condition` every `interval` seconds until it holds (true) or `seconds` pass
    /// (false); an error the condition throws ends the wait.
    @discardableResult
    static func until(seconds: Double, every interval: Double = 0.02, _ condition: () throws -> Bool) rethrows -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while try !condition() {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: interval)
        }
        return true
    }
}
