import Dispatch
import Foundation
import Synchronization

/// Turns Ctrl-C into a call on a queue (a Dispatch signal source), so the ticker can print what
/// it has and exit cleanly instead of dying mid-line.
final class Interruption: @unchecked Sendable {
    // Invariant: immutable after init; Dispatch sources are thread-safe.
    private let source: any DispatchSourceSignal
    private let fired = Atomic<Bool>(false)

    init() {
        signal(SIGINT, SIG_IGN)
        self.source = DispatchSource.makeSignalSource(signal: SIGINT, queue: DispatchQueue(label: "sigint"))
    }

    /// Whether Ctrl-C was pressed.
    var happened: Bool { self.fired.load(ordering: .acquiring) }

    /// Calls `action` (once) on the first Ctrl-C.
    func onSignal(_ action: @escaping @Sendable () -> Void) {
        self.source.setEventHandler { [self] in
            if !self.fired.exchange(true, ordering: .acquiringAndReleasing) { action() }
        }
        self.source.activate()
    }
}
