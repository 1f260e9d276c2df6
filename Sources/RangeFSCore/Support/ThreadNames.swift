import Foundation

/// Names threads for the system's tools (`top -H`, `ps -L`, `pgrep`, perf, a core dump's
/// threads): Foundation's `Thread.name` on Linux stays inside Foundation, and a mount started in
/// the background runs as `/proc/self/exe`, which the system would call "exe".
public enum ThreadNames {
    /// Linux keeps this many bytes of a thread's name (`comm` cuts a longer one short).
    static let limit = 15

    /// Names the calling thread. The main thread's name is the process's. (Through its `comm`
    /// file: Swift's Glibc module leaves out `pthread_setname_np`, and `prctl` is variadic.) A
    /// name is a nicety: if it cannot be set, the thread runs unnamed.
    public static func nameCurrentThread(_ name: String) {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        defer { close(descriptor) }
        let bytes = Array(name.utf8.prefix(limit))
        _ = write(descriptor, bytes, bytes.count)
    }

    /// Starts a thread running `body`, named `name` for Foundation and for the system.
    static func start(_ name: String, _ body: @escaping @Sendable () -> Void) {
        let thread = Thread {
            nameCurrentThread(name)
            body()
        }
        thread.name = name
        thread.start()
    }
}
