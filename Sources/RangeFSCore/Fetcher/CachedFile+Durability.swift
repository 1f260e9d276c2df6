import Foundation
import Synchronization

/// Keeping what was fetched: syncing and committing blocks, the sha256 check, promotion to the
/// final name, eviction, and the data file's lifetime.
extension CachedFile {
    /// Syncs the data, then commits its blocks; promotes the file once every block is durable.
    func commit() {
        let (snapshot, durable, invalidated, file) = state.withLock { state in
            let (available, durable, invalidated) = state.plan.commitStarting()
            return (available, durable, invalidated, state.dataFile)
        }
        guard let file, snapshot != durable, !invalidated else { return }
        do {
            try file.synchronize()
            let complete = snapshot.isComplete
            if complete, let mismatch = try digestMismatch(of: file) {
                return reject(because: mismatch)
            }
            if complete {
                try promote()
                CrashPoint.reached(.promotion)
            }
            try environment.store.commitBlocks(url: cacheKey, bitmap: snapshot.serialized,
                                               state: complete ? .complete : .partial)
            let corrected = state.withLock { state in
                defer { closeIfIdle(&state) }
                return state.plan.committed(snapshot, complete: complete)
            }
            if let corrected {
                // A source's copy turned out to differ while this commit ran: its blocks go again.
                try environment.store.commitBlocks(url: cacheKey, bitmap: corrected.serialized, state: .partial)
                return
            }
            if complete {
                environment.logger.info("complete: \(url.redactedForDisplay) (\(layout.fileSize) bytes)")
            }
        } catch {
            // The data may not be on disk (a full disk shows up here, at writeback): trust only
            // what is durable, so those blocks are fetched again rather than served from a hole.
            environment.logger.error("cannot commit cached blocks of \(url.redactedForDisplay): \(error)")
            let outOfSpace = CacheBudget.isOutOfSpace(error)
            let (dropped, actions, replyFile) = state.withLock { state in
                let (dropped, actions) = state.plan.commitRolledBack(outOfSpace: outOfSpace, error: "\(error)")
                closeIfIdle(&state)
                return (dropped, actions, state.dataFile)
            }
            events.cachedBytesChanged(-Int64(dropped))
            perform(actions, file: replyFile)
        }
    }

    /// Hashes the finished file when the manifest gives a sha256; returns why it does not
    /// match, or nil. It runs inside `commit()` on the committer's queue: off the read path
    /// (readers go on being answered from the blocks meanwhile), and in line with eviction and
    /// every other commit of this file, so the data cannot be dropped or promoted mid-hash.
    private func digestMismatch(of file: DataFile) throws -> String? {
        guard let expected = state.withLock({ $0.plan.expectedSHA256 }) else { return nil }
        let actual = try file.sha256(size: layout.fileSize)
        return actual == expected ? nil : "sha256 mismatch: expected \(expected), got \(actual)"
    }

    /// The finished file is not what the manifest promised: its readers fail, its data and
    /// blocks are forgotten, and it stays failed (fetching nothing) until the catalog replaces
    /// it — after a refresh with another sha256, or a `verify` that finds a new version.
    private func reject(because reason: String) {
        let actions = state.withLock { state -> [FilePlan.Action] in
            let actions = state.plan.reject(because: reason)
            if !actions.isEmpty { discardData(&state) }
            return actions
        }
        guard !actions.isEmpty else { return }
        environment.logger.error("\(url.redactedForDisplay): \(reason); its cached data is discarded")
        do {
            try environment.store.commitBlocks(url: cacheKey, bitmap: emptyBitmap, state: .remote)
            try environment.store.recordFailure(url: cacheKey, reason: reason)
        } catch {
            environment.logger.error("cannot record the failure of \(url.redactedForDisplay): \(error)")
        }
        perform(actions, file: nil)
    }

    /// Moves the finished data file to its final name (open descriptors follow it). The rename
    /// runs under the file's lock: `openDataFile` picks a name and opens it under the same lock,
    /// so it never opens the partial name just after it went away (which would create a new,
    /// empty file and answer readers with zeros).
    private func promote() throws {
        let directory = environment.directory
        let partial = directory.dataPath(name: dataName, complete: false)
        let final = directory.dataPath(name: dataName, complete: true)
        let renamed = state.withLock { _ in rename(partial, final) == 0 || errno == ENOENT }
        guard renamed else {
            throw CacheError.system("cannot promote \(partial)")
        }
        let folder = open(directory.dataDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        if folder >= 0 {
            fsync(folder)
            close(folder)
        }
    }

    // MARK: Eviction

    /// Drops every cached block and the data file, unless a reader or a transfer uses the
    /// file. Returns the bytes freed, or nil when the file is busy. Runs on the committer's
    /// queue, so no commit of this file can race with it.
    func evictIfIdle() -> UInt64? {
        state.withLock { state -> UInt64? in
            guard let freed = state.plan.evictIfIdle() else { return nil }
            discardData(&state)
            return freed
        }
    }

    /// Closes and removes this version's data file (its blocks are forgotten by the plan).
    /// Under the lock, so no read can reopen the old file in between.
    private func discardData(_ state: inout State) {
        state.dataFile = nil
        unlink(environment.directory.dataPath(name: dataName, complete: false))
        unlink(environment.directory.dataPath(name: dataName, complete: true))
    }

    var emptyBitmap: [UInt8] {
        BlockBitmap(blockCount: layout.blockCount).serialized
    }

    // MARK: Data file

    /// The data file was removed behind the cache's back (or by an eviction killed before its
    /// commit): its blocks are forgotten and fetched again. The record follows on the commit
    /// queue, ahead of any later commit of this file, so no SQLite call runs under the lock.
    func forgetLostData(of plan: inout FilePlan) {
        environment.logger.warning("cache data of \(url.redactedForDisplay) is missing; fetching it again")
        events.cachedBytesChanged(-Int64(plan.dataLost()))
        let store = environment.store
        let key = cacheKey
        let empty = plan.durable.serialized
        environment.committer.schedule {
            try? store.commitBlocks(url: key, bitmap: empty, state: .remote)
        }
    }

    /// The data file, opened if need be. A file whose plan holds written bytes is only ever
    /// opened, never created: a new file would be all holes, and its readers would get zeros
    /// where the plan says the bytes are. If it is gone, its blocks are forgotten instead.
    func openDataFile(_ state: inout State) throws -> DataFile {
        if let file = state.dataFile { return file }
        let directory = environment.directory
        let partial = directory.dataPath(name: dataName, complete: false)
        let final = directory.dataPath(name: dataName, complete: true)
        // A crash between promotion and its commit leaves the final name with a partial state.
        let path = state.plan.complete || (access(partial, F_OK) != 0 && access(final, F_OK) == 0) ? final : partial
        guard state.plan.holdsWrittenBytes else {
            let file = try DataFile(path: path, size: layout.fileSize)
            state.dataFile = file
            return file
        }
        guard let file = try DataFile(existingAt: path, size: layout.fileSize) else {
            forgetLostData(of: &state.plan)
            return try openDataFile(&state)
        }
        state.dataFile = file
        return file
    }

    func closeIfIdle(_ state: inout State) {
        if state.plan.isIdle {
            state.dataFile = nil
        }
    }
}
