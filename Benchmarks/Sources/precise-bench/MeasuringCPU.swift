import CLimit
import Foundation

/// The CPU a cost run's measuring thread is pinned to, passed to the child in
/// ``environmentKey``.
///
/// This VM's two CPUs are not alike: on a day of this project's (2026-11-27) the by-handle pair
/// with random victims cost 513 ns on CPU 0 and 760 on CPU 1, and the C floor 427 against 593,
/// both under `taskset`. A child the system placed on the slow CPU lost the row for its column.
/// So each round of the peers' cost rows runs every column's measuring thread on the same CPU,
/// round `k` on the `k`-th allowed CPU in turn: every column meets each CPU as often as the
/// others do.
///
/// Only the thread that makes the measured calls is pinned, never a whole process: Go's
/// collector and tokio's workers stay free to run on the other CPU, as they would unpinned
/// (Go pinned as a whole process cost about a fifth more per pair here). In PreciseTimer's
/// probes the pin comes first, so the service's loop thread, started after it, inherits it; that
/// thread is idle in the cost rows.
enum MeasuringCPU {
    /// The variable a child reads: the CPU number, decimal.
    static let environmentKey = "PRECISE_BENCH_CPU"

    /// The CPUs this thread may run on, in order (empty if they cannot be read).
    static func allowed() -> [Int32] {
        var cpus = [Int32](repeating: 0, count: 1_024)
        let count = cpus.withUnsafeMutableBufferPointer { climit_allowed_cpus($0.baseAddress!, Int32($0.count)) }
        return count > 0 ? Array(cpus.prefix(Int(count))) : []
    }

    /// The environment of a child whose measuring thread runs on `cpu` (none: unpinned).
    static func environment(_ cpu: Int32?) -> [String: String]? {
        guard let cpu else { return nil }
        return ProcessInfo.processInfo.environment.merging([Self.environmentKey: "\(cpu)"]) { $1 }
    }

    /// In a child: pins the calling thread to the CPU its parent asked for, if it asked.
    ///
    /// - Throws: ``BenchmarkSkip`` when the variable is not a CPU this process may use.
    static func pinFromEnvironment() throws {
        guard let value = ProcessInfo.processInfo.environment[Self.environmentKey] else { return }
        guard let cpu = Int32(value) else {
            throw BenchmarkSkip(reason: "\(Self.environmentKey)=\(value) is not a CPU number")
        }
        let rc = climit_pin_thread(cpu)
        guard rc == 0 else {
            throw BenchmarkSkip(reason: "cannot pin to CPU \(cpu): \(String(cString: strerror(rc)))")
        }
    }
}
