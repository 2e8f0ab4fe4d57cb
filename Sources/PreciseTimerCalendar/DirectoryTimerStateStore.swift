import Dispatch
import Glibc
import PreciseTimerCore

/// A ``TimerStateStore`` in a directory: one stamp file per unit, written crash-safe, and
/// exclusive between the processes of one host that share the directory.
///
/// ```swift
/// let store = try DirectoryTimerStateStore(directory: "/var/lib/my-daemon/timers")
/// if try await store.claim(occurrence, of: "backup") {
///     // This process, and no other sharing the directory, runs the 02:00 backup.
/// }
/// ```
///
/// **Files.** As systemd keeps `/var/lib/systemd/timers/stamp-*.timer`, the store keeps
/// `stamp-<name>` per unit ID, holding the last claimed occurrence (nanoseconds since the epoch)
/// and the ID. `<name>` is the ID's UTF-8 bytes with every byte outside `[A-Za-z0-9._-]` written
/// `%XX` (so `/`, `..`, spaces and non-ASCII never leave the directory, and two IDs never share a
/// name); a name longer than 200 bytes is cut to 100 and followed by `~` and a 128-bit hash of the
/// whole ID (the stamp's stored ID tells a collision apart: the calls then throw). Beside each stamp
/// lie `lock-<name>` (the lock, never removed: removing a lock file while another process waits
/// on it would let two processes hold "the" lock) and, for a moment, `tmp-<name>`.
///
/// **Claims.** ``claim(_:of:)`` takes an exclusive `flock(2)` on `lock-<name>`, reads the stamp,
/// and succeeds only when the occurrence is after the stored last trigger: an occurrence is never
/// claimed twice, and an older one never after a newer. It then writes `tmp-<name>`, `fsync`s it,
/// `rename`s it over the stamp and `fsync`s the directory, and only then releases the lock and
/// returns `true`. The lock is per open file, so two stores in one process exclude each other as
/// two processes do. Processes on different hosts sharing the directory over a network file system
/// are not covered (`flock` over NFS is not reliable).
///
/// **What a caller may assume after a crash** (of the process, or of the host):
/// - The stamp is the old one or the new one, never a mixture: it is replaced by `rename(2)`.
/// - `true` was returned only after the new stamp and its directory entry were on disk: a claimed
///   occurrence stays claimed across a crash and a reboot.
/// - A crash before the rename leaves the old stamp: the occurrence was not claimed, nobody was
///   told `true`, and a later claim of it (by any process) may succeed.
/// - A crash (or an error thrown) after the rename and before the call returned may leave the
///   occurrence recorded though no caller was told `true`: it is then lost, never run twice.
/// - A caller told `true` that dies before its handler runs loses the occurrence too: the store
///   gives at most once, not at least once.
/// - A `tmp-<name>` left by a crash is ignored and overwritten by the next claim.
///
/// **Threads.** The calls are `async`; their file I/O (a few system calls and, for a claim that
/// succeeds, two `fsync`s: some milliseconds on a disk) and the wait for another process's lock
/// run on a serial `DispatchQueue(label:)` of the store, never on the calling task's thread. On
/// Linux, Swift concurrency's global executor also runs on libdispatch's threads, a pool sized to
/// the CPUs, which blocking I/O would hold up; a serial queue targets libdispatch's overcommitting
/// root queue instead, which starts another thread when its threads block. Chosen over a dedicated
/// thread because it needs no thread lifetime to manage and the sections are short. Copies of a
/// store share its queue. The calls do not observe task cancellation: once the lock is taken a
/// call ends in bounded time, and the lock is held for one claim only.
public struct DirectoryTimerStateStore: TimerStateStore {
    /// The store's directory, as an absolute path without symbolic links.
    public var directory: String { self.storage.directory }

    private let storage: Storage

    /// What the copies of one store share. Only `let`s of `Sendable` values.
    final class Storage: Sendable {
        let directory: String
        let queue: DispatchQueue
        /// `false` skips the two `fsync`s (tests that measure the locking, not the disk).
        let isDurable: Bool
        /// Called after the temporary file is written and before it is renamed over the stamp.
        let beforeRename: (@Sendable (TimerID) -> Void)?

        init(directory: String, isDurable: Bool, beforeRename: (@Sendable (TimerID) -> Void)?) {
            self.directory = directory
            self.queue = DispatchQueue(label: "PreciseTimerCalendar.DirectoryTimerStateStore")
            self.isDurable = isDurable
            self.beforeRename = beforeRename
        }
    }

    /// Opens the store in `directory`, creating it (and missing parents) with mode 0700 if needed.
    ///
    /// - Parameter directory: The directory's path; relative paths are resolved now, against the
    ///   current directory.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``:
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` when the path is empty or
    ///   names something that is not a directory (`value` holds the path);
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when `mkdir`, `stat` or
    ///   `realpath` fails (`function` and `errno` say which and why).
    public init(directory: String) throws(PreciseTimerError) {
        try self.init(directory: directory, isDurable: true, beforeRename: nil)
    }

    /// The test seam: `isDurable: false` skips the `fsync`s, `beforeRename` runs (on the store's
    /// queue, under the unit's lock) between writing the temporary file and renaming it.
    package init(
        directory: String, isDurable: Bool, beforeRename: (@Sendable (TimerID) -> Void)?
    ) throws(PreciseTimerError) {
        let resolved = try Self.makeDirectory(directory)
        self.storage = Storage(directory: resolved, isDurable: isDurable, beforeRename: beforeRename)
    }

    /// The last occurrence claimed for a unit in this directory, by any process.
    ///
    /// - Parameter id: The unit's ID.
    /// - Returns: The stamp's occurrence, or `nil` when the unit has no stamp.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``:
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` when the stamp cannot be read;
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` when it holds no
    ///   occurrence, or another ID's (`value` is its path).
    public func lastTrigger(of id: TimerID) async throws(PreciseTimerError) -> WallClockInstant? {
        let files = StampFiles(directory: self.storage.directory, id: id)
        // A reader needs no lock: the stamp is only ever replaced whole, by rename.
        return try await self.onQueue { () throws(PreciseTimerError) in try files.readStamp() }
    }

    /// Claims an occurrence of a unit for the caller, if it is after the unit's last trigger.
    ///
    /// - Parameters:
    ///   - occurrence: The elapse the caller is about to run.
    ///   - id: The unit's ID.
    /// - Returns: `true` when `occurrence` is after the stamp's (or there is no stamp) and the new
    ///   stamp is on disk: the caller runs it. `false` when the stamp holds `occurrence` or a later
    ///   one: another caller ran, runs or skipped past it.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError``:
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` naming the failed call (`open`,
    ///   `flock`, `read`, `write`, `fsync`, `rename`) and its `errno`, or
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidConfiguration`` for a stamp that is not
    ///   one. The caller must not run the occurrence; it may or may not be recorded (see the type's
    ///   notes).
    /// - Important: The I/O runs on the store's serial queue; the calling task only waits. A stamp
    ///   recorded by a crashed or failed call stays recorded (see the type's notes).
    public func claim(_ occurrence: WallClockInstant, of id: TimerID) async throws(PreciseTimerError) -> Bool {
        let files = StampFiles(directory: self.storage.directory, id: id)
        let storage = self.storage
        return try await self.onQueue { () throws(PreciseTimerError) in
            let lock = try files.lock()
            defer { close(lock) }
            if let last = try files.readStamp(), occurrence <= last { return false }
            try files.writeTemporary(occurrence, durable: storage.isDurable)
            storage.beforeRename?(id)
            try files.replaceStamp(durable: storage.isDurable)
            return true
        }
    }

    /// Runs `body` on the store's queue and waits for it without holding a thread.
    private func onQueue<T: Sendable>(
        _ body: @escaping @Sendable () throws(PreciseTimerError) -> T
    ) async throws(PreciseTimerError) -> T {
        let result: Result<T, PreciseTimerError> = await withCheckedContinuation { continuation in
            self.storage.queue.async {
                continuation.resume(returning: Result { () throws(PreciseTimerError) in try body() })
            }
        }
        return try result.get()
    }
}
