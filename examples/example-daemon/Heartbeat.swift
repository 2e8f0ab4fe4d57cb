import PreciseTimer
import Synchronization

/// A repeating timer that measures how late its own loop serves it: the daemon's canary for
/// "is the timer loop healthy". Each tick's lateness (deadline to handler call) is kept until the
/// stats line takes it; missed periods are counted (the default `.skip` policy reports them).
final class Heartbeat: Sendable {
    /// What the heartbeat saw since the last ``take()``.
    struct Window {
        var latenessNanoseconds: [Int64] = []
        var missed: UInt64 = 0
    }

    let interval: Duration
    private let window = Mutex(Window())
    private let whole = Mutex(Window())

    init(interval: Duration) {
        self.interval = interval
    }

    /// Starts beating on `lane`.
    func start(on lane: PreciseTimer) throws {
        try lane.scheduleRepeating(id: "heartbeat", every: self.interval) { [weak self] tick in
            let nanoseconds = tick.lateness.wholeNanoseconds
            guard let self else { return }
            self.window.withLock { window in
                window.latenessNanoseconds.append(nanoseconds)
                window.missed += tick.missed
            }
            self.whole.withLock { whole in
                whole.latenessNanoseconds.append(nanoseconds)
                whole.missed += tick.missed
            }
        }
    }

    /// Every tick since the start (a 10 ms heartbeat keeps 8 bytes per tick: 2.8 MB a day; a real
    /// daemon would keep a histogram).
    func takeWhole() -> Window {
        self.whole.withLock { $0 }
    }

    /// The ticks since the last call, and starts a new window.
    func take() -> Window {
        self.window.withLock { window in
            defer { window = Window() }
            return window
        }
    }
}
