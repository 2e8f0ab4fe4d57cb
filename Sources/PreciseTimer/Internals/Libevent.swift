import CLibevent
import Glibc
import PreciseTimerCore
import Synchronization

/// The one wall over libevent: every `event_*` call the engine makes goes through here, and every
/// failure becomes a ``PreciseTimerError`` on one path (``failure(_:returnCode:)``).
enum Libevent {
    /// A failure of `function`: ``PreciseTimerError/Code/libeventFailure`` with its return code
    /// and `errno` as they are now (read it right after the call).
    static func failure(_ function: String, returnCode: Int32? = nil) -> PreciseTimerError {
        PreciseTimerError(.libeventFailure, function: function, returnCode: returnCode, errno: Glibc.errno)
    }

    /// Throws the failure of `function` unless `returnCode` is 0.
    static func check(_ returnCode: Int32, _ function: String) throws(PreciseTimerError) {
        guard returnCode == 0 else { throw Self.failure(function, returnCode: returnCode) }
    }

    /// The size libevent's `struct event` has in the library actually loaded.
    static let eventSize = event_get_struct_event_size()
}

/// A libevent failure a test can make the engine see, since a real one cannot be provoked.
package enum InjectedEngineFailure: UInt8, Sendable {
    case none
    /// The next `event_add` of a timer event reports failure.
    case alarmAdd
    /// `event_base_loop` returns -1 the next time it would return.
    case loop
}

/// Test seam: the ``InjectedEngineFailure`` an engine's wall calls report once instead of
/// libevent's answer (a real failure cannot be provoked). Production code never sets it; each
/// check is one relaxed load.
final class InjectedFaults: Sendable {
    private let pending = Atomic<UInt8>(InjectedEngineFailure.none.rawValue)

    func inject(_ failure: InjectedEngineFailure) {
        self.pending.store(failure.rawValue, ordering: .relaxed)
    }

    /// Whether `failure` is pending; takes it if so.
    func take(_ failure: InjectedEngineFailure) -> Bool {
        guard self.pending.load(ordering: .relaxed) == failure.rawValue else { return false }
        return self.pending.compareExchange(
            expected: failure.rawValue, desired: InjectedEngineFailure.none.rawValue, ordering: .relaxed
        ).exchanged
    }

    func isPending(_ failure: InjectedEngineFailure) -> Bool {
        self.pending.load(ordering: .relaxed) == failure.rawValue
    }
}

/// An `event_base *` (the engine's own, or a caller's).
struct LibeventBase: @unchecked Sendable {
    // Invariant: used by `init` and then only on the thread that drives the base.
    let pointer: OpaquePointer

    /// A base that keeps the engine's precision: epoll with `EVENT_BASE_FLAG_PRECISE_TIMER`
    /// (timerfd instead of epoll's whole milliseconds, `CLOCK_MONOTONIC` instead of the 4 ms coarse
    /// clock), no time cache (a timeout added from a callback counts from a fresh read), no
    /// locking (only the loop thread calls libevent). poll and select have no timerfd: failing
    /// is better than silently losing precision.
    static func makePrecise() throws(PreciseTimerError) -> LibeventBase {
        guard let config = event_config_new() else { throw Libevent.failure("event_config_new") }
        defer { event_config_free(config) }
        event_config_set_flag(
            config,
            CLibevent_EVENT_BASE_FLAG_PRECISE_TIMER() | CLibevent_EVENT_BASE_FLAG_NO_CACHE_TIME()
                | CLibevent_EVENT_BASE_FLAG_NOLOCK())
        event_config_avoid_method(config, "poll")
        event_config_avoid_method(config, "select")
        guard let base = event_base_new_with_config(config) else {
            throw Libevent.failure("event_base_new_with_config")
        }
        return LibeventBase(pointer: base)
    }

    /// `event_base_loop` with `EVLOOP_NO_EXIT_ON_EMPTY`, until `loopBreak()`.
    func loop(faults: InjectedFaults) throws(PreciseTimerError) {
        var rc = event_base_loop(self.pointer, CLibevent_EVLOOP_NO_EXIT_ON_EMPTY())
        if faults.take(.loop) { rc = -1 }
        guard rc != -1 else { throw Libevent.failure("event_base_loop", returnCode: rc) }
    }

    /// `event_base_loopbreak`: the loop returns after the current callback.
    func loopBreak() { event_base_loopbreak(self.pointer) }

    /// `event_base_update_cache_time`: a caller's base caches the time at each pass of its loop.
    func updateCacheTime() { _ = event_base_update_cache_time(self.pointer) }

    /// `event_base_free` (own base only, once its events are freed).
    func free() { event_base_free(self.pointer) }

    /// `event_base_get_method`: the backend's name.
    var method: String { event_base_get_method(self.pointer).map { String(cString: $0) } ?? "unknown" }

    /// `event_gettime_monotonic`: the base's idea of now, in microseconds.
    func monotonicMicroseconds() throws(PreciseTimerError) -> Int64 {
        var time = timeval()
        try Libevent.check(event_gettime_monotonic(self.pointer, &time), "event_gettime_monotonic")
        return Int64(time.tv_sec) * 1_000_000 + Int64(time.tv_usec)
    }
}

/// A `struct event`, in storage of the engine's own (zeroed, so that deleting one that was never
/// assigned is harmless: libevent sees no base).
struct LibeventEvent: @unchecked Sendable {
    // Invariant: allocated by `allocate()`, deallocated once by `deallocate()` after `delete()`;
    // assigned, added and deleted on the thread that drives its base.
    let pointer: OpaquePointer

    /// The C signature libevent calls back with.
    typealias Callback = @convention(c) (Int32, Int16, UnsafeMutableRawPointer?) -> Void

    static func allocate() -> LibeventEvent {
        let storage = UnsafeMutableRawPointer.allocate(byteCount: Libevent.eventSize, alignment: 16)
        storage.initializeMemory(as: UInt8.self, repeating: 0, count: Libevent.eventSize)
        return LibeventEvent(pointer: OpaquePointer(storage))
    }

    /// `evtimer_assign`: a pure timer event.
    func assignTimer(
        on base: LibeventBase, _ callback: Callback, _ context: UnsafeMutableRawPointer
    )
        throws(PreciseTimerError)
    {
        try Libevent.check(CLibevent_evtimer_assign(self.pointer, base.pointer, callback, context), "evtimer_assign")
    }

    /// `event_assign` with `EV_READ | EV_PERSIST` on `fd`, then `event_add` without a timeout.
    func addPersistentRead(
        fd: Int32, on base: LibeventBase, _ callback: Callback, _ context: UnsafeMutableRawPointer
    ) throws(PreciseTimerError) {
        let flags = Int16(CLibevent_EV_READ() | CLibevent_EV_PERSIST())
        try Libevent.check(event_assign(self.pointer, base.pointer, fd, flags, callback, context), "event_assign")
        try Libevent.check(event_add(self.pointer, nil), "event_add")
    }

    /// `evtimer_add` in `timeout` (see `timeval(roundingUp:)`).
    func addTimer(in timeout: Duration, faults: InjectedFaults) throws(PreciseTimerError) {
        var tv = timeval(roundingUp: timeout)
        var rc = CLibevent_evtimer_add(self.pointer, &tv)
        if faults.take(.alarmAdd) { rc = -1 }
        try Libevent.check(rc, "event_add")
    }

    /// `event_del`; harmless on an event never assigned or already deleted.
    func delete() { event_del(self.pointer) }

    func deallocate() { UnsafeMutableRawPointer(self.pointer).deallocate() }
}
