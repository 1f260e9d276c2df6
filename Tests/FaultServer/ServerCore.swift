import Synchronization

/// The running server: the listening socket, its threads and the shared state. Threads
/// hold the core, not the public `FaultServer`, so dropping the last `FaultServer`
/// reference still runs its `deinit` and stops them.
final class ServerCore: Sendable {
    let listener: ListeningSocket
    let stop: StopSignal
    let limits: ServerLimits
    let state = Mutex(ServerState())
    private let threads = WorkerThreads()

    init(limits: ServerLimits) throws {
        listener = try ListeningSocket()
        stop = try StopSignal()
        self.limits = limits
    }

    func start() {
        threads.start(name: "FaultServer accept") { [self] in
            // The accept thread owns the listening socket: closing it from another thread
            // while this one polls it could hit a reused descriptor number.
            defer { listener.close() }
            while let socket = listener.accept(stop: stop) {
                let number = state.withLock { $0.connectionAccepted() }
                threads.start(name: "FaultServer connection \(number)") { [self] in
                    ConnectionHandler(core: self, socket: socket, number: number).run()
                }
            }
        }
    }

    /// Wakes every thread and waits for them; false when some did not finish within `timeout`.
    @discardableResult
    func shutdown(timeout: Duration) -> Bool {
        stop.fire()
        return threads.waitForAll(timeout: timeout)
    }
}
