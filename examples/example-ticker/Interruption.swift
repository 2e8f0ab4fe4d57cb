import Dispatch
import PreciseTimer
import Synchronization

import Glibc

/// Ctrl-C as an event on a queue: SIGINT is ignored at the process level and delivered through
/// a Dispatch signal source, so the reaction (stop the tickers, print the summary) runs as
/// ordinary code on an ordinary thread, never inside an asynchronous signal handler.
///
/// - Important: Create it on the main thread before any timer service. It also blocks SIGINT in
///   the calling thread, and threads started afterwards (PreciseTimer's loop thread) inherit that
///   mask, so a SIGINT that arrives before libdispatch has registered its signalfd waits, pending,
///   instead of being discarded as ignored; and no thread receives it except through the source.
///
/// A second Ctrl-C ends the process at once (status 130), should the summary ever hang. SIGINTs
/// within a second of the first count as the same one: GNU `timeout -s INT` sends the signal twice
/// (to the child, then to its process group). The disposition is never set back to the default:
/// on Linux libdispatch installs a forwarding handler of its own for a watched signal, and a late
/// duplicate must not kill the process while it prints the summary.
final class Interruption {
    /// When the first SIGINT arrived.
    private final class Flag: Sendable {
        /// `MonotonicInstant` nanoseconds of the first SIGINT, or `Int64.min` before it.
        private let raisedAt = Atomic<Int64>(.min)

        /// Notes a SIGINT that arrived at `now`.
        /// - Returns: `nil` for the first, otherwise how long after the first this one came.
        func raise(at now: MonotonicInstant) -> Duration? {
            let (exchanged, first) = self.raisedAt.compareExchange(
                expected: .min, desired: now.nanoseconds, ordering: .acquiringAndReleasing)
            return exchanged ? nil : .nanoseconds(now.nanoseconds - first)
        }

        var isRaised: Bool { self.raisedAt.load(ordering: .acquiring) != .min }
    }

    /// How long after the first SIGINT another one is still taken as the same Ctrl-C.
    private static let repeatWindow: Duration = .seconds(1)

    private let source: any DispatchSourceSignal
    private let flag = Flag()

    /// Starts watching for SIGINT.
    /// - Parameter action: Called once, on a Dispatch queue, at the first Ctrl-C.
    init(onInterrupt action: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        var blocked = sigset_t()
        sigemptyset(&blocked)
        sigaddset(&blocked, SIGINT)
        pthread_sigmask(SIG_BLOCK, &blocked, nil)

        self.source = DispatchSource.makeSignalSource(
            signal: SIGINT, queue: DispatchQueue(label: "example-ticker.sigint"))
        let flag = self.flag
        self.source.setEventHandler {
            guard let sinceFirst = flag.raise(at: MonotonicInstant.now()) else {
                action()
                return
            }
            if sinceFirst >= Self.repeatWindow {
                Self.abandon()
            }
        }
        self.source.activate()
    }

    deinit {
        // SIGINT stays ignored and blocked: the process is about to print its summary and exit.
        self.source.cancel()
    }

    /// Whether Ctrl-C was pressed.
    var happened: Bool { self.flag.isRaised }

    /// The second Ctrl-C: leave now, without the summary, as an interrupted process does.
    private static func abandon() -> Never {
        let message = "\nexample-ticker: interrupted again, exiting without a summary\n"
        message.utf8CString.withUnsafeBufferPointer { bytes in
            _ = write(STDERR_FILENO, bytes.baseAddress, bytes.count - 1)
        }
        _exit(130)
    }
}
