import Dispatch
import Foundation

/// A live status line, redrawn in place on a terminal (plain periodic lines otherwise).
final class ProgressLine: @unchecked Sendable {
    // Invariant: immutable after init; Dispatch sources are thread-safe.
    private let recorders: [LatencyRecorder]
    private let timer: (any DispatchSourceTimer)?
    private let isTerminal = isatty(STDOUT_FILENO) != 0

    init(recorders: [LatencyRecorder], enabled: Bool) {
        self.recorders = recorders
        self.timer = enabled ? DispatchSource.makeTimerSource(queue: DispatchQueue(label: "progress")) : nil
    }

    func start() {
        guard let timer = self.timer else { return }
        let period: DispatchTimeInterval = self.isTerminal ? .milliseconds(250) : .seconds(1)
        timer.schedule(deadline: .now() + period, repeating: period)
        timer.setEventHandler { [self] in self.draw() }
        timer.activate()
    }

    func stop() {
        self.timer?.cancel()
    }

    private func draw() {
        let parts = self.recorders.map { recorder in
            let latest = recorder.latestLateness.map { String(format: "%.0f µs", Double($0) / 1_000) } ?? "-"
            return "\(recorder.name): \(recorder.count) ticks, now \(latest) late"
        }
        let line = parts.joined(separator: "  |  ")
        if self.isTerminal {
            print("\r\u{1B}[2K" + line, terminator: "")
            fflush(nil)  // All streams: `stdout` is a global var Swift 6 will not touch.
        } else {
            print(line)
        }
    }
}
