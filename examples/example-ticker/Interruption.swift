import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ctrl-C as an event on a queue: SIGINT is ignored at the process level and delivered through
/// a Dispatch signal source, so the reaction (stop the tickers, print the summary) runs as
/// ordinary code on an ordinary thread, never inside an asynchronous signal handler.
///
/// After the first Ctrl-C the default disposition is restored, so a second one ends the
/// process at once should the summary ever hang.
final class Interruption {
    /// Set once, by the first SIGINT.
    private final class Flag: Sendable {
        private let raised = Atomic<Bool>(false)

        /// Raises the flag; `true` only for the call that raised it.
        func raise() -> Bool {
            !self.raised.exchange(true, ordering: .acquiringAndReleasing)
        }

        var isRaised: Bool { self.raised.load(ordering: .acquiring) }
    }

    private let source: any DispatchSourceSignal
    private let flag = Flag()

    /// Starts watching for SIGINT.
    /// - Parameter action: Called once, on a Dispatch queue, at the first Ctrl-C.
    init(onInterrupt action: @escaping @Sendable () -> Void) {
        signal(SIGINT, SIG_IGN)
        self.source = DispatchSource.makeSignalSource(
            signal: SIGINT, queue: DispatchQueue(label: "example-ticker.sigint"))
        let flag = self.flag
        self.source.setEventHandler {
            guard flag.raise() else { return }
            signal(SIGINT, SIG_DFL)
            action()
        }
        self.source.activate()
    }

    deinit {
        self.source.cancel()
        signal(SIGINT, SIG_DFL)
    }

    /// Whether Ctrl-C was pressed.
    var happened: Bool { self.flag.isRaised }
}
