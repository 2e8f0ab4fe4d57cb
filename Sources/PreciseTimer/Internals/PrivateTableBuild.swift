import CLibevent
import Dispatch
import Glibc
import PreciseTimerCore
import Synchronization

/// Builds the engine's own base where no other thread can take the descriptors libevent needs,
/// so that running out of them is a ``/PreciseTimerCore/PreciseTimerError``, never libevent's
/// `exit(1)`.
///
/// libevent 2.1 ends the process when the socketpair of its signal handling cannot be made
/// (`evsig_init_` → `event_sock_err(1, …)` → `exit(1)`, fatal callback or not). A check that
/// descriptors are free cannot be made one step with libevent's own calls in the process's
/// table: another thread may take them in between. So:
///
/// 1. Reserve ``LibeventBase/descriptorsNeeded`` slots in the process's table: running out here
///    is the typed error (``LibeventBase/reserveDescriptors(like:)``).
/// 2. On a short-lived thread of its own, unshare the descriptor table
///    (`close_range(~0, ~0, CLOSE_RANGE_UNSHARE)`, else `unshare(CLONE_FILES)`): a copy that only
///    this thread uses. There, fill every free slot below the reservations, close the
///    reservations' copies and build the base: libevent's descriptors land exactly on the
///    reserved numbers, in a table no other thread can take a slot from.
/// 3. Pass them back over a socketpair (`SCM_RIGHTS`, one at a time, so that a receive needs one
///    free slot) and `dup3` each onto its reserved number in the process's table, where the base
///    expects it. A receive that finds no free slot is `EMFILE`; the base is then freed in the
///    private table, and nothing leaks.
///
/// Where the kernel refuses both calls (a seccomp filter, a kernel without them), the base is
/// built in the process's table after the reservation, and the old window remains (README,
/// "Limits"). While the helper thread lives (well under a millisecond), the descriptors open at
/// its start stay open in its copy of the table: one another thread closes then is really
/// closed (a peer sees the end of a socket) only when the helper exits.
enum PrivateTableBuild {
    /// What the helper thread reports.
    private enum Outcome: Sendable {
        /// The kernel refused a private table: build in the process's table.
        case unshareRefused
        case failed(PreciseTimerError)
        /// Built; libevent's descriptors are on `numbers` in the private table, sent in this order.
        case built(LibeventBase, numbers: [Int32])
    }

    /// The two steps the caller and the helper thread wait for each other at.
    private final class Handshake: Sendable {
        let outcome = SemaphoreGuarded<Outcome?>(nil)
        let outcomeReady = DispatchSemaphore(value: 0)
        /// Whether the caller placed the descriptors (else the helper frees the base it built).
        let accepted = Atomic<Bool>(false)
        let verdictReady = DispatchSemaphore(value: 0)
    }

    /// Builds a base as ``LibeventBase/makePrecise()`` does, in a private descriptor table where
    /// the kernel allows one (see the type).
    ///
    /// - Parameter fd: Any descriptor of the engine's, open for the whole call (duplicated to
    ///   hold slots).
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError/Code/systemFailure`` (`EMFILE`) when the
    ///   descriptors cannot be had, or the helper thread cannot start;
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/libeventFailure`` when libevent cannot build
    ///   the base.
    static func makePreciseBase(like fd: Int32) throws(PreciseTimerError) -> LibeventBase {
        let reserved = try LibeventBase.reserveDescriptors(like: fd)
        if let base = try Self.buildInPrivateTable(reserved: reserved, like: fd) { return base }
        // Refused: the reservation (closed by now) was the check; libevent builds in place.
        return try LibeventBase.makePrecise()
    }

    /// Steps 2 and 3 (see the type). `nil`: the kernel refused a private table. The reservations
    /// are replaced by libevent's descriptors, or closed.
    private static func buildInPrivateTable(
        reserved: [Int32], like fd: Int32
    ) throws(PreciseTimerError) -> LibeventBase? {
        var pair: [Int32] = [-1, -1]
        let socketType = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
        guard socketpair(AF_UNIX, socketType, 0, &pair) == 0 else {
            let error = PreciseTimerError(
                .systemFailure, value: "a socketpair to pass libevent's descriptors back", function: "socketpair",
                returnCode: -1, errno: Glibc.errno)
            Self.close(reserved)
            throw error
        }
        defer { Self.close(pair) }
        let handshake = Handshake()
        let sender = pair[0]
        let started = PosixThread.start(detached: false) {
            Self.build(reserved: reserved, like: fd, sender: sender, handshake: handshake)
        }
        guard case .success(let thread) = started else {
            Self.close(reserved)
            let code = if case .failure(let error) = started { error.code } else { Int32(0) }
            throw PreciseTimerError(
                .systemFailure, value: "a thread to build libevent's base on", function: "pthread_create",
                returnCode: code, errno: code)
        }
        // Joined before the socketpair closes (defers run last first).
        defer { pthread_join(thread, nil) }
        handshake.outcomeReady.wait()
        // The helper reports before it signals, on every path.
        switch handshake.outcome.withLock({ $0 }) ?? .unshareRefused {
        case .unshareRefused:
            Self.close(reserved)
            return nil
        case .failed(let error):
            Self.close(reserved)
            throw error
        case .built(let base, let numbers):
            defer { handshake.verdictReady.signal() }
            do {
                try Self.place(numbers, from: pair[1], reserved: reserved)
            } catch {
                Self.close(reserved)
                throw error
            }
            handshake.accepted.store(true, ordering: .releasing)
            return base
        }
    }

    // MARK: The helper thread (its own descriptor table)

    private static func build(reserved: [Int32], like fd: Int32, sender: Int32, handshake: Handshake) {
        func report(_ outcome: Outcome) {
            handshake.outcome.withLock { $0 = outcome }
            handshake.outcomeReady.signal()
        }
        guard Self.unshareTable() else { return report(.unshareRefused) }
        // From here on this thread's table is its own: what it opens or closes, no other thread
        // sees, and no other thread takes a slot from it. It goes when the thread exits.
        let highest = reserved.max() ?? 0
        var firstFreeAbove: Int32?
        while true {
            let filler = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            guard filler >= 0 else { break }  // EMFILE: every slot under the limit is taken.
            if filler > highest {
                firstFreeAbove = filler
                Glibc.close(filler)
                break
            }
        }
        Self.close(reserved)  // Now the only free slots up to `highest`: libevent's lowest.
        let base: LibeventBase
        do {
            base = try LibeventBase.makePrecise()
        } catch {
            return report(.failed(error))
        }
        // Every descriptor libevent opened is on a reserved number when the first free slot
        // above them is still the one found before.
        let probe = fcntl(fd, F_DUPFD_CLOEXEC, highest + 1)
        if probe >= 0 { Glibc.close(probe) }
        let numbers = reserved.filter { fcntl($0, F_GETFD) >= 0 }
        guard (probe >= 0 ? probe : nil) == firstFreeAbove, !numbers.isEmpty else {
            base.free()
            return report(
                .failed(
                    PreciseTimerError(
                        .systemFailure,
                        value: "libevent opened other descriptors than the \(LibeventBase.descriptorsNeeded) reserved",
                        function: "event_base_new_with_config")))
        }
        // One message per descriptor: the caller needs one free slot at a time to receive them.
        let sent = numbers.lazy.map { Self.send($0, over: sender) }.first { $0 != 0 } ?? 0
        guard sent == 0 else {
            base.free()
            return report(
                .failed(PreciseTimerError(.systemFailure, function: "sendmsg", returnCode: -1, errno: sent)))
        }
        report(.built(base, numbers: numbers))
        handshake.verdictReady.wait()
        if !handshake.accepted.load(ordering: .acquiring) { base.free() }  // Closes them in this table only.
    }

    /// Test seam: act as where the kernel refuses a private table. One relaxed load per build.
    private static let refusedForTesting = Atomic<Bool>(false)

    /// Every later build acts as where the kernel refuses a private table (tests only).
    static func refuseForTesting() {
        Self.refusedForTesting.store(true, ordering: .relaxed)
    }

    /// Gives this thread a descriptor table of its own, a copy of the process's.
    private static func unshareTable() -> Bool {
        guard !Self.refusedForTesting.load(ordering: .relaxed) else { return false }
        return close_range(UInt32.max, UInt32.max, CLibevent_CLOSE_RANGE_UNSHARE()) == 0
            || unshare(CLibevent_CLONE_FILES()) == 0
    }

    // MARK: Passing descriptors (SCM_RIGHTS)

    /// Sends `descriptor` in a message of its own. Returns 0, or `errno`.
    private static func send(_ descriptor: Int32, over socket: Int32) -> Int32 {
        let length = MemoryLayout<Int32>.size
        return Self.withMessage(controlSpace: CLibevent_CMSG_SPACE(length)) { message in
            guard let header = CLibevent_CMSG_FIRSTHDR(&message) else { return EINVAL }
            header.pointee.cmsg_level = SOL_SOCKET
            header.pointee.cmsg_type = Int32(SCM_RIGHTS)
            header.pointee.cmsg_len = CLibevent_CMSG_LEN(length)
            UnsafeMutableRawPointer(CLibevent_CMSG_DATA(header)).storeBytes(of: descriptor, as: Int32.self)
            return sendmsg(socket, &message, 0) == 1 ? 0 : Glibc.errno
        }
    }

    /// Runs `body` with a one-byte message whose control buffer holds `space` zeroed bytes: the
    /// shape `SCM_RIGHTS` travels in, sent or received.
    private static func withMessage<Result>(controlSpace space: Int, _ body: (inout msghdr) -> Result) -> Result {
        let control = UnsafeMutableRawPointer.allocate(byteCount: space, alignment: MemoryLayout<cmsghdr>.alignment)
        defer { control.deallocate() }
        control.initializeMemory(as: UInt8.self, repeating: 0, count: space)
        var byte: UInt8 = 0
        return withUnsafeMutablePointer(to: &byte) { byte in
            var part = iovec(iov_base: byte, iov_len: 1)
            return withUnsafeMutablePointer(to: &part) { part in
                var message = msghdr()
                message.msg_iov = part
                message.msg_iovlen = 1
                message.msg_control = control
                message.msg_controllen = space
                return body(&message)
            }
        }
    }

    /// Receives the descriptors sent for `numbers`, one at a time, and puts each on its number in
    /// the process's table (over the reservation there); closes the reservations libevent did
    /// not use.
    private static func place(_ numbers: [Int32], from socket: Int32, reserved: [Int32]) throws(PreciseTimerError) {
        for number in numbers {
            let received = try Self.receive(count: 1, from: socket)
            defer { Self.close(received) }
            guard dup3(received[0], number, O_CLOEXEC) == number else {
                throw PreciseTimerError(.systemFailure, function: "dup3", returnCode: -1, errno: Glibc.errno)
            }
        }
        Self.close(reserved.filter { !numbers.contains($0) })
    }

    /// Receives one message of `count` descriptors (close-on-exec).
    private static func receive(count: Int, from socket: Int32) throws(PreciseTimerError) -> [Int32] {
        var received: [Int32] = []
        let space = CLibevent_CMSG_SPACE(count * MemoryLayout<Int32>.size)
        let (result, flags, error) = Self.withMessage(controlSpace: space) { message in
            let result = recvmsg(socket, &message, Int32(MSG_CMSG_CLOEXEC))
            let error = Glibc.errno
            // What arrived is ours to close, whatever else went wrong.
            if result >= 0, let header = CLibevent_CMSG_FIRSTHDR(&message), header.pointee.cmsg_level == SOL_SOCKET,
                header.pointee.cmsg_type == Int32(SCM_RIGHTS)
            {
                let data = UnsafeRawPointer(CLibevent_CMSG_DATA(header))
                let length = Int(header.pointee.cmsg_len) - Int(CLibevent_CMSG_LEN(0))
                for index in 0..<(length / MemoryLayout<Int32>.size) {
                    received.append(
                        data.loadUnaligned(fromByteOffset: index * MemoryLayout<Int32>.size, as: Int32.self))
                }
            }
            return (result, message.msg_flags, error)
        }
        // Truncated: the process's table had no free slot for every descriptor (the kernel
        // closed the rest).
        guard result == 1, flags & Int32(MSG_CTRUNC) == 0, received.count == count else {
            Self.close(received)
            throw PreciseTimerError(
                .systemFailure, value: "\(count) free file descriptors for libevent's", function: "recvmsg",
                returnCode: Int32(result), errno: result < 0 ? error : EMFILE)
        }
        return received
    }

    private static func close(_ descriptors: [Int32]) {
        for descriptor in descriptors { Glibc.close(descriptor) }
    }
}
