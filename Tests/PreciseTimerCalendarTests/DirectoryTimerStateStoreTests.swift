import Foundation
import Glibc
import PreciseTimerCalendar
import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// A fresh directory under /tmp (``TestFiles/temporaryDirectory(prefix:)``), removed when the
/// test ends.
private struct TemporaryDirectory: ~Copyable {
    let path: String

    init() throws {
        self.path = try TestFiles.temporaryDirectory(prefix: "precise-store", units: false)
    }

    deinit { TestFiles.remove(self.path) }
}

private func instant(_ seconds: Int64) -> WallClockInstant {
    WallClockInstant(nanosecondsSinceEpoch: 1_764_000_000_000_000_000 + seconds * 1_000_000_000)
}

@Suite("DirectoryTimerStateStore: stamps, claims, crashes")
struct DirectoryTimerStateStoreTests {
    @Test("occurrences claimed in order are all the caller's; the last is the unit's last trigger")
    func claimsInOrder() async throws {
        let root = try TemporaryDirectory()
        let store = try DirectoryTimerStateStore(directory: root.path)
        #expect(try await store.lastTrigger(of: "backup") == nil)
        for second in [0, 1, 60, 3_600] as [Int64] {
            #expect(try await store.claim(instant(second), of: "backup"))
            #expect(try await store.lastTrigger(of: "backup") == instant(second))
        }
    }

    @Test("a repeated occurrence, or one older than the last trigger, is refused and changes nothing")
    func repeatedOrOlderRefused() async throws {
        let root = try TemporaryDirectory()
        let store = try DirectoryTimerStateStore(directory: root.path)
        #expect(try await store.claim(instant(10), of: "job"))
        #expect(try await store.claim(instant(10), of: "job") == false)
        #expect(try await store.claim(instant(9), of: "job") == false)
        #expect(try await store.claim(WallClockInstant(nanosecondsSinceEpoch: .min), of: "job") == false)
        #expect(try await store.lastTrigger(of: "job") == instant(10))
        // One nanosecond later is a new occurrence.
        let next = WallClockInstant(nanosecondsSinceEpoch: instant(10).nanosecondsSinceEpoch + 1)
        #expect(try await store.claim(next, of: "job"))
        #expect(try await store.lastTrigger(of: "job") == next)
        // Units are independent.
        #expect(try await store.claim(instant(9), of: "other"))
    }

    @Test("a restart: a new store on the directory reads the last trigger and refuses it again")
    func restartKeepsTheStamp() async throws {
        let root = try TemporaryDirectory()
        do {
            let first = try DirectoryTimerStateStore(directory: root.path)
            #expect(try await first.claim(instant(5), of: "daily"))
        }
        let second = try DirectoryTimerStateStore(directory: root.path)
        #expect(try await second.lastTrigger(of: "daily") == instant(5))
        #expect(try await second.claim(instant(5), of: "daily") == false)
        #expect(try await second.claim(instant(6), of: "daily"))
        let third = try DirectoryTimerStateStore(directory: root.path + "/.")
        #expect(try await third.lastTrigger(of: "daily") == instant(6))
    }

    @Test("IDs with '/', '..', spaces, '%' and unicode, empty and long: one file each, all inside the directory")
    func awkwardIDsStayInside() async throws {
        let root = try TemporaryDirectory()
        let directory = root.path + "/store"
        let store = try DirectoryTimerStateStore(directory: directory)
        let long = String(repeating: "x", count: 300)
        let ids: [TimerID] = [
            "a/b", "/etc/passwd", "..", "../escape", ".", "../../tmp/x", "with space", "tab\there", "new\nline",
            "日本語 ⏰", "café", "caf%C3%A9", "%41", "A", "", "stamp-A", "lock-A", "~", TimerID(long),
            TimerID(long + "y"), TimerID(long + "z"), "NUL\u{0}byte",
        ]
        for (index, id) in ids.enumerated() {
            #expect(try await store.claim(instant(Int64(index)), of: id), "\(id.rawValue.debugDescription)")
        }
        for (index, id) in ids.enumerated() {
            #expect(try await store.lastTrigger(of: id) == instant(Int64(index)), "\(id.rawValue.debugDescription)")
        }
        // Nothing was created beside the store's directory, and inside it only plain files.
        #expect(try FileManager.default.contentsOfDirectory(atPath: root.path) == ["store"])
        let entries = try FileManager.default.contentsOfDirectory(atPath: directory)
        #expect(entries.filter { $0.hasPrefix("stamp-") }.count == ids.count)
        for entry in entries {
            #expect(!entry.contains("/") && entry.utf8.count <= 255)
            var status = stat()
            #expect(lstat(directory + "/" + entry, &status) == 0 && (status.st_mode & S_IFMT) == S_IFREG, "\(entry)")
        }
    }

    @Test("two stores, 8 tasks, 1 000 occurrences: exactly one caller is told true for each")
    func racingClaims() async throws {
        let root = try TemporaryDirectory()
        // Without the fsyncs (a test seam): this measures the lock, and 1 000 synced writes take
        // several seconds on a disk. The synced path races in the next test.
        let stores = try (0..<2).map { _ in
            try DirectoryTimerStateStore(directory: root.path, isDurable: false, beforeRename: nil)
        }
        let occurrences = 1_000
        let wins = try await withThrowingTaskGroup(of: [Int].self) { group in
            for task in 0..<8 {
                let store = stores[task % 2]
                group.addTask {
                    var won: [Int] = []
                    for occurrence in 0..<occurrences
                    where try await store.claim(instant(Int64(occurrence)), of: "race") {
                        won.append(occurrence)
                    }
                    return won
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(wins.sorted() == Array(0..<occurrences))
        #expect(try await stores[0].lastTrigger(of: "race") == instant(Int64(occurrences - 1)))
    }

    @Test("with the fsyncs: two stores, 4 tasks, 40 occurrences, one true each")
    func racingDurableClaims() async throws {
        let root = try TemporaryDirectory()
        let stores = try (0..<2).map { _ in try DirectoryTimerStateStore(directory: root.path) }
        let wins = try await withThrowingTaskGroup(of: [Int].self) { group in
            for task in 0..<4 {
                let store = stores[task % 2]
                group.addTask {
                    var won: [Int] = []
                    for occurrence in 0..<40 where try await store.claim(instant(Int64(occurrence)), of: "durable") {
                        won.append(occurrence)
                    }
                    return won
                }
            }
            return try await group.reduce(into: [Int]()) { $0 += $1 }
        }
        #expect(wins.sorted() == Array(0..<40))
    }

    @Test(
        "two processes racing over 1 000 occurrences: each told true by one of them, never both",
        .disabled(if: Sanitizers.threadSanitizerIsActive, "fork under ThreadSanitizer can hang in its runtime")
    )
    func racingProcesses() async throws {
        let root = try TemporaryDirectory()
        let directory = root.path
        let occurrences = 1_000
        async let child = #expect(processExitsWith: .success) { [directory = directory as String] in
            let store = try DirectoryTimerStateStore(directory: directory, isDurable: false, beforeRename: nil)
            // Tell the parent to start, so that both claim at once.
            close(open(directory + "/ready", O_CREAT | O_WRONLY, 0o600))
            var won: [String] = []
            for occurrence in 0..<1_000 where try await store.claim(instant(Int64(occurrence)), of: "shared") {
                won.append(String(occurrence))
            }
            try won.joined(separator: " ").write(toFile: directory + "/child-wins", atomically: true, encoding: .utf8)
            _exit(0)
        }
        let store = try DirectoryTimerStateStore(directory: directory, isDurable: false, beforeRename: nil)
        for _ in 0..<1_000 where !FileManager.default.fileExists(atPath: directory + "/ready") {
            try await Task.sleep(for: .milliseconds(5))
        }
        var parentWins: [Int] = []
        for occurrence in 0..<occurrences where try await store.claim(instant(Int64(occurrence)), of: "shared") {
            parentWins.append(occurrence)
        }
        _ = await child
        let childWins = try String(contentsOfFile: directory + "/child-wins", encoding: .utf8)
            .split(separator: " ").compactMap { Int($0) }
        #expect(Set(parentWins).isDisjoint(with: childWins))
        #expect((parentWins + childWins).sorted() == Array(0..<occurrences))
    }

    @Test(
        "a child killed between writing the new stamp and its rename: the old stamp stays, the occurrence is unclaimed",
        .disabled(if: Sanitizers.threadSanitizerIsActive, "fork under ThreadSanitizer can hang in its runtime")
    )
    func killedBeforeRename() async throws {
        let root = try TemporaryDirectory()
        let directory = root.path
        let store = try DirectoryTimerStateStore(directory: directory)
        #expect(try await store.claim(instant(1), of: "unit/1"))
        await #expect(processExitsWith: .signal(SIGKILL)) { [directory = directory as String] in
            let dying = try DirectoryTimerStateStore(
                directory: directory, isDurable: true, beforeRename: { _ in kill(getpid(), SIGKILL) })
            _ = try await dying.claim(instant(2), of: "unit/1")
            _exit(0)  // Not reached: the seam kills the process under the unit's lock.
        }
        // The new stamp was written (to the temporary file) and never renamed.
        let temporary = directory + "/tmp-" + DirectoryTimerStateStore.fileName(for: "unit/1")
        #expect(FileManager.default.fileExists(atPath: temporary))
        #expect(try await store.lastTrigger(of: "unit/1") == instant(1))
        // The lock died with the child; the occurrence it did not claim is still claimable, once.
        #expect(try await store.claim(instant(2), of: "unit/1"))
        #expect(try await store.claim(instant(2), of: "unit/1") == false)
        #expect(try await DirectoryTimerStateStore(directory: directory).lastTrigger(of: "unit/1") == instant(2))
        #expect(!FileManager.default.fileExists(atPath: temporary))
    }

    @Test("init creates a missing directory (and parents) with mode 0700, and resolves the path")
    func initCreates() throws {
        let root = try TemporaryDirectory()
        let store = try DirectoryTimerStateStore(directory: root.path + "/a/b//c/")
        var status = stat()
        #expect(stat(root.path + "/a/b/c", &status) == 0)
        #expect(status.st_mode & 0o777 == 0o700)
        #expect(store.directory == root.path + "/a/b/c")
    }

    @Test("init refuses an empty path, a file, and a path under a file, with typed errors")
    func initRefuses() throws {
        let root = try TemporaryDirectory()
        let file = root.path + "/file"
        #expect(FileManager.default.createFile(atPath: file, contents: Data()))
        #expect(throws: PreciseTimerError.self) { try DirectoryTimerStateStore(directory: "") }
        do {
            _ = try DirectoryTimerStateStore(directory: file)
            Issue.record("a file was taken for a directory")
        } catch {
            #expect(error.code == .invalidConfiguration && error.value == file)
        }
        do {
            _ = try DirectoryTimerStateStore(directory: file + "/below")
            Issue.record("a path under a file was created")
        } catch {
            #expect(error.code == .systemFailure && error.function == "mkdir" && error.errno == ENOTDIR)
        }
    }

    @Test("a stamp that is not one (or another ID's) is an error for both calls, never a guess")
    func corruptStamp() async throws {
        let root = try TemporaryDirectory()
        let store = try DirectoryTimerStateStore(directory: root.path)
        #expect(try await store.claim(instant(1), of: "good"))
        let stamp = root.path + "/stamp-" + DirectoryTimerStateStore.fileName(for: "bad")
        #expect(FileManager.default.createFile(atPath: stamp, contents: Data("yesterday\n".utf8)))
        await #expect(throws: PreciseTimerError.self) { try await store.lastTrigger(of: "bad") }
        await #expect(throws: PreciseTimerError.self) { try await store.claim(instant(2), of: "bad") }
        // Another unit's stamp under this unit's name (as a hash collision would leave it).
        let good = root.path + "/stamp-" + DirectoryTimerStateStore.fileName(for: "good")
        #expect(rename(good, stamp) == 0)
        await #expect(throws: PreciseTimerError.self) { try await store.lastTrigger(of: "bad") }
    }

    @Test("a directory removed under the store: claim throws systemFailure naming the call and errno")
    func removedDirectory() async throws {
        let root = try TemporaryDirectory()
        let directory = root.path + "/store"
        let store = try DirectoryTimerStateStore(directory: directory)
        try FileManager.default.removeItem(atPath: directory)
        do {
            _ = try await store.claim(instant(1), of: "job")
            Issue.record("claimed in a directory that is gone")
        } catch {
            #expect(error.code == .systemFailure && error.function == "open" && error.errno == ENOENT)
            #expect(error.id == "job")
        }
    }
}
