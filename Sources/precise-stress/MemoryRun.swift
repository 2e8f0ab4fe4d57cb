import Glibc
import PreciseTimer

/// Millions of schedule/cancel cycles on one thread: the resident set must stay flat (nothing
/// leaks per timer: not the node, not the ID, not a heap entry).
struct MemoryRun {
    let cycles: Int
    /// Growth allowed between the warm-up sample and the end: allocator noise, not a leak (a
    /// leak of even 1 byte per cycle would be 9 MB over 10 M cycles).
    static let slackBytes = 4 << 20

    struct Result {
        let summary: String
        let isFlat: Bool
    }

    func run(on timers: any TimerService) throws -> Result {
        defer { timers.shutdown() }
        guard self.cycles > 0 else { return Result(summary: "memory check skipped", isFlat: true) }
        let warmUp = max(1, self.cycles / 10)
        var warm = 0
        let start = MonotonicInstant.now()
        for cycle in 0..<self.cycles {
            if cycle == warmUp { warm = Self.residentBytes() }
            let id = try timers.schedule(id: nil, after: .seconds(3_600), options: .init()) { _ in }
            timers.cancel(id)
        }
        let elapsed = MonotonicInstant.now() - start
        let end = Self.residentBytes()
        let growth = end - warm
        let perCycle = elapsed / self.cycles
        return Result(
            summary: "\(self.cycles) schedule/cancel cycles (\(perCycle.summary) each): RSS \(warm >> 10) KiB → "
                + "\(end >> 10) KiB (\(growth >= 0 ? "+" : "")\(growth >> 10) KiB, \(growth <= Self.slackBytes ? "flat" : "GROWING"))",
            isFlat: growth <= Self.slackBytes)
    }

    /// The resident set from `/proc/self/statm`, in bytes.
    static func residentBytes() -> Int {
        let descriptor = open("/proc/self/statm", O_RDONLY)
        guard descriptor >= 0 else { return 0 }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 128)
        let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        guard count > 0 else { return 0 }
        // "size resident shared …" in pages.
        let fields = buffer[..<count].split(separator: UInt8(ascii: " "))
        guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
        return pages * sysconf(Int32(_SC_PAGESIZE))
    }
}
