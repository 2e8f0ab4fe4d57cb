import CLibevent
import Glibc
import PreciseTimer
import PreciseTimerTesting

/// A libevent base of the test's own, as a daemon that already runs libevent has one: built
/// with `EVENT_BASE_FLAG_PRECISE_TIMER`, driven by a thread of its own, with a socketpair whose
/// first end has a persistent read event. Everything here runs on that thread.
final class SocketLoop: @unchecked Sendable {
    // Invariant: created, used and freed on the loop thread only (see `run`); other threads get
    // at it only through `write(_:)` on the socket, which is thread-safe.
    let base: OpaquePointer
    private var readEvent: OpaquePointer?
    private let reading: Int32
    private let writing: Int32
    /// What the read event does with each byte (loop thread).
    private let onRead: (SocketLoop, UInt8) -> Void

    private init(base: OpaquePointer, sockets: (Int32, Int32), onRead: @escaping (SocketLoop, UInt8) -> Void) {
        self.base = base
        (self.reading, self.writing) = sockets
        self.onRead = onRead
    }

    /// An epoll base with `EVENT_BASE_FLAG_PRECISE_TIMER`, as a daemon would build it.
    static func preciseBase() -> OpaquePointer {
        guard let config = event_config_new() else { fatalError("event_config_new") }
        defer { event_config_free(config) }
        event_config_set_flag(config, CLibevent_EVENT_BASE_FLAG_PRECISE_TIMER())
        guard let base = event_base_new_with_config(config) else { fatalError("event_base_new_with_config") }
        return base
    }

    /// Builds a precise base and the socketpair on a new thread, calls `setUp` there (create the
    /// service on the loop thread), dispatches until `event_base_loopbreak`, calls `tearDown`,
    /// then frees the read event, the base and the sockets. Returns at once.
    static func run(
        setUp: @escaping @Sendable (SocketLoop) -> Void,
        onRead: @escaping @Sendable (SocketLoop, UInt8) -> Void,
        tearDown: @escaping @Sendable (SocketLoop) -> Void = { _ in }
    ) {
        detachThread {
            let base = Self.preciseBase()
            var sockets: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &sockets) == 0 else { fatalError("socketpair") }
            let loop = SocketLoop(base: base, sockets: (sockets[0], sockets[1]), onRead: onRead)
            // The event gets the loop unretained: `loop` outlives it (freed below, before `loop` goes).
            loop.readEvent = event_new(
                base, loop.reading, Int16(CLibevent_EV_READ() | CLibevent_EV_PERSIST()),
                { fd, _, arg in
                    var byte: UInt8 = 0
                    guard read(fd, &byte, 1) == 1 else { return }
                    let loop = Unmanaged<SocketLoop>.fromOpaque(arg!).takeUnretainedValue()
                    loop.onRead(loop, byte)
                }, Unmanaged.passUnretained(loop).toOpaque())
            event_add(loop.readEvent!, nil)
            setUp(loop)
            event_base_dispatch(base)
            tearDown(loop)
            event_free(loop.readEvent!)
            event_base_free(base)
            close(loop.reading)
            close(loop.writing)
        }
    }

    /// Sends one byte to the read event (any thread).
    func write(_ byte: UInt8) {
        var byte = byte
        _ = Glibc.write(self.writing, &byte, 1)
    }

    /// The events added to the base (loop thread).
    var addedEvents: Int32 {
        event_base_get_num_events(self.base, UInt32(EVENT_BASE_COUNT_ADDED))
    }

    /// Ends `event_base_dispatch` (loop thread).
    func stop() {
        event_base_loopbreak(self.base)
    }
}

/// `pthread_self()` as a number, to compare threads.
func currentThread() -> UInt { UInt(pthread_self()) }
