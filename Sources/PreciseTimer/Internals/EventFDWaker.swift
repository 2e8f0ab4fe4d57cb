import CLibevent
import PreciseTimerCore
import Glibc
import Synchronization

/// The core's clock and the loop's doorbell: an `eventfd` the loop thread watches with a
/// libevent read event.
///
/// Other threads never call libevent: they write this fd, so libevent runs without
/// `evthread_use_pthreads()` and its locks. The fd is closed only when the last holder is gone
/// (the core, the engine and any handler still queued), so a late `wake()` can never write to a
/// descriptor number the process has since reused.
final class EventFDWaker: TimerDriver, @unchecked Sendable {
    // Invariant: `fd` is immutable, valid until deinit, and eventfd writes are thread-safe.
    let fd: Int32
    /// Set by ``wake()`` before it writes, cleared by ``drain()``: a spinning loop polls this
    /// instead of the fd, to give the loop back at once when someone rang.
    private let rung = Atomic<Bool>(false)

    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` naming `eventfd` and `errno` (for
    ///   example when the process is out of file descriptors).
    init() throws(PreciseTimerError) {
        let fd = eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC))
        guard fd >= 0 else {
            throw PreciseTimerError(.systemFailure, function: "eventfd", returnCode: fd, errno: Glibc.errno)
        }
        self.fd = fd
    }

    deinit {
        close(self.fd)
    }

    func now() -> Int64 {
        MonotonicInstant.now().nanoseconds
    }

    /// `CLOCK_REALTIME`, plus the test seam's offset (0 outside tests).
    func wallClockNow() -> Int64 {
        wallClockNanoseconds() &+ self.wallClockOffset.load(ordering: .relaxed)
    }

    /// `CLOCK_BOOTTIME`, plus the test seam's offset (0 outside tests).
    func continuousNow() -> Int64 {
        continuousNanoseconds() &+ self.continuousOffset.load(ordering: .relaxed)
    }

    /// Test seam: what the engine's wall and continuous clocks read beyond the machine's, so a
    /// test can step the wall clock or pretend a suspend without touching the machine's clocks.
    private let wallClockOffset = Atomic<Int64>(0)
    private let continuousOffset = Atomic<Int64>(0)

    /// Moves the engine's wall and continuous clocks by these many nanoseconds (tests only).
    func shiftClocks(wall: Int64, continuous: Int64) {
        self.wallClockOffset.add(wall, ordering: .relaxed)
        self.continuousOffset.add(continuous, ordering: .relaxed)
    }

    /// How far the engine's wall and continuous clocks read beyond the machine's (0 outside
    /// tests): a timerfd, which counts on the machine's clock, is armed this much earlier.
    var clockOffsets: (wall: Int64, continuous: Int64) {
        (self.wallClockOffset.load(ordering: .relaxed), self.continuousOffset.load(ordering: .relaxed))
    }

    func wake() {
        self.rung.store(true, ordering: .releasing)
        // Cannot fail short of a closed fd: the counter would need 2^64 unread wake-ups.
        _ = eventfd_write(self.fd, 1)
    }

    /// Clears the counter (loop thread, from the read event's callback).
    func drain() {
        self.rung.store(false, ordering: .relaxed)
        var value: eventfd_t = 0
        _ = eventfd_read(self.fd, &value)
    }

    /// Whether the doorbell rang since the loop last drained it.
    var hasRung: Bool { self.rung.load(ordering: .acquiring) }
}
