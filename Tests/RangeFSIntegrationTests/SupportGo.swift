import Foundation

/// A Go program of `Tests/Conformance/` built into a scratch directory, with Go's caches and
/// home there too, so the build needs no home directory and nothing from the network.
enum GoProgram {
    /// `go` on PATH, else where Debian's golang-go and the upstream archive put it.
    static func goBinary() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let directories = path.split(separator: ":").map(String.init) + ["/usr/lib/go/bin", "/usr/local/go/bin"]
        return directories.map { ($0 as NSString).appendingPathComponent("go") }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }

    /// Builds the program in `folder` (relative to the package root) and returns its path.
    static func build(_ folder: String, named name: String) throws -> String {
        guard let go = goBinary() else {
            throw HarnessError("""
                Go is not installed (no `go` on PATH): the tests build \(folder) with it. \
                Run scripts/install-deps.sh, which installs golang-go.
                """)
        }
        let dir = try Scratch.makeDir("\(name)-build")
        let output = dir.appendingPathComponent(name).path
        var environment: [String] = []
        for (variable, sub) in [("GOCACHE", "cache"), ("GOPATH", "path"), ("HOME", "home")] {
            let subdirectory = dir.appendingPathComponent(sub)
            try FileManager.default.createDirectory(at: subdirectory, withIntermediateDirectories: true)
            environment.append("\(variable)=\(subdirectory.path)")
        }
        // The standard library alone: no proxy, no toolchain download, no C compiler.
        environment += ["GOPROXY=off", "GOTOOLCHAIN=local", "CGO_ENABLED=0", "GOFLAGS="]
        let source = RangeFSBinary.packageRoot.appendingPathComponent(folder).path
        let result = Command.run(["env", "-C", source] + environment + [go, "build", "-o", output, "."], timeout: 300)
        guard result.succeeded, FileManager.default.isExecutableFile(atPath: output) else {
            throw HarnessError("building \(folder) failed (Go 1.19 or later is needed):\n\(result)")
        }
        return output
    }
}
