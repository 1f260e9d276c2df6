import Logging
import Synchronization

/// The head and tail sizes learned per file type from first scans (`FirstScan`), kept in the
/// cache database, so the heads and tails of the next collection (and of the next mount) are
/// the size its scanner needs. A type nothing was learned about uses its defaults
/// (`HeadTailSizes.defaults(forType:)`), and learning starts from them.
final class LearnedHeadTails: Sendable {
    private struct State {
        var learned: [String: HeadTailSizes]
        /// Types learned about since the last save, and whether a save is scheduled.
        var unsaved: Set<String> = []
        var saveScheduled = false
    }

    /// A leaf lock: nothing is called while it is held.
    private let state: Mutex<State>
    private let store: MetadataStore
    private let committer: Committer
    private let logger: Logger

    init(store: MetadataStore, committer: Committer, logger: Logger) {
        self.store = store
        self.committer = committer
        self.logger = logger
        let learned: [String: HeadTailSizes]
        do {
            learned = try store.learnedHeadTails()
        } catch {
            logger.error("cannot read the learned head and tail sizes: \(error)")
            learned = [:]
        }
        state = Mutex(State(learned: learned))
    }

    /// The sizes to fetch first of a file of `type` (`HeadTailSizes.fileType(ofName:)`).
    func sizes(forType type: String) -> HeadTailSizes {
        state.withLock { $0.learned[type] } ?? HeadTailSizes.defaults(forType: type)
    }

    /// A first scan of a file of `type` needed `lesson`. Saved on the commit queue, a batch at
    /// a time: a library's scan teaches thousands of times in a few seconds.
    func learn(_ lesson: HeadTailSizes, forType type: String) {
        let first = state.withLock { state -> Bool in
            let before = state.learned[type] ?? HeadTailSizes.defaults(forType: type)
            state.learned[type] = before.learning(lesson)
            state.unsaved.insert(type)
            defer { state.saveScheduled = true }
            return !state.saveScheduled
        }
        guard first else { return }
        committer.schedule { [self] in
            let unsaved = state.withLock { state in
                defer {
                    state.unsaved = []
                    state.saveScheduled = false
                }
                return state.learned.filter { state.unsaved.contains($0.key) }
            }
            do { try store.saveLearnedHeadTails(unsaved) } catch { logger.error("cannot keep the learned head and tail sizes: \(error)") }
        }
    }
}
