import Dispatch

/// libdispatch starts its timer thread on the first `asyncAfter` of a process and a worker
/// thread on the first use of a queue. Each costs a millisecond or more, paid by whichever
/// request comes first: the first `open` of a mount schedules the prefetcher's look after the
/// open grace, and its reply waited for the timer thread to start. A mount warms them up while
/// it starts, before the kernel sends anything. Serial queues (the committer's, which saves the
/// first probe's record) run on threads of their own kind, started here too.
public enum DispatchWarmUp {
    public static func start() {
        DispatchQueue.global().asyncAfter(deadline: .now()) {}
        DispatchQueue.global(qos: .utility).async {}
        DispatchQueue(label: "rangefs.warm-up").async {}
    }
}
