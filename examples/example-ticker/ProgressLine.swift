import Dispatch
import PreciseTimer
import Synchronization

import Glibc

/// The live status shown while the tickers run: redrawn in place four times a second on a
/// terminal, one plain line a second otherwise (a log file, a pipe, CI).
///
/// It writes with `write(2)` straight to the file descriptor, from a Dispatch timer of its
/// own, so it never touches the tickers' threads; it reads the recorders under their locks.
final class ProgressLine {
    /// How the line is drawn.
    enum Style: Sendable {
        /// Redraw one line in place (`\r`, erase line).
        case terminal
        /// Append a line per update.
        case lines
    }

    /// Draws lines; shared by the timer's handler and ``finish()``, serialised by its lock.
    private final class Painter: Sendable {
        let recorders: [LatencyRecorder]
        let fileDescriptor: Int32
        let style: Style
        let startedAt: MonotonicInstant
        /// Whether the final line was drawn, and when the last line was.
        private let drawn = Mutex((isFinished: false, lastAt: MonotonicInstant?.none))

        init(recorders: [LatencyRecorder], fileDescriptor: Int32, style: Style, startedAt: MonotonicInstant) {
            self.recorders = recorders
            self.fileDescriptor = fileDescriptor
            self.style = style
            self.startedAt = startedAt
        }

        /// Draws the current state; `final` draws the last line and stops further drawing. As
        /// plain lines, a final line right after a periodic one is left out: it would repeat it.
        func draw(final: Bool) {
            self.drawn.withLock { drawn in
                guard !drawn.isFinished else { return }
                drawn.isFinished = final
                let now = MonotonicInstant.now()
                switch self.style {
                case .terminal:
                    // A line longer than the terminal would wrap, and `\r` would then redraw only its tail.
                    var status = self.status(at: now)
                    if let columns = self.columns, status.count >= columns {
                        status = String(status.prefix(columns - 2)) + "…"
                    }
                    Self.emit("\r\u{1B}[2K" + status + (final ? "\n" : ""), to: self.fileDescriptor)
                case .lines:
                    guard !final || drawn.lastAt.map({ now - $0 > .milliseconds(500) }) ?? true else { return }
                    Self.emit(self.status(at: now) + "\n", to: self.fileDescriptor)
                }
                drawn.lastAt = now
            }
        }

        /// The terminal's width (`TIOCGWINSZ`), asked at every draw so a resize takes effect.
        private var columns: Int? {
            var size = winsize()
            guard ioctl(self.fileDescriptor, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 2 else { return nil }
            return Int(size.ws_col)
        }

        /// `1.25s  PreciseTimer 1249 ticks, last 52µs, max 410µs  |  Dispatch …`
        private func status(at now: MonotonicInstant) -> String {
            let elapsed = (now.nanoseconds - self.startedAt.nanoseconds) / 10_000_000
            let parts = self.recorders.map { recorder in
                let progress = recorder.progress
                var part = "\(recorder.name) \(progress.ticks) ticks"
                if progress.missed > 0 { part += ", \(progress.missed) missed" }
                if progress.ticks > 0 {
                    part += ", last \(progress.lastLateness / 1_000)µs, max \(progress.maxLateness / 1_000)µs"
                }
                return part
            }
            return "\(elapsed / 100).\(elapsed % 100 < 10 ? "0" : "")\(elapsed % 100)s  "
                + parts.joined(separator: "  |  ")
        }

        private static func emit(_ text: String, to fileDescriptor: Int32) {
            var text = text
            text.withUTF8 { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = write(fileDescriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0 && errno == EINTR {
                        continue
                    } else {
                        return  // A closed pipe or a full disk: the progress line is not worth failing for.
                    }
                }
            }
        }
    }

    private let timer: any DispatchSourceTimer
    private let painter: Painter
    private let period: DispatchTimeInterval

    /// Prepares the line; nothing is drawn until ``start()``.
    /// - Parameters:
    ///   - recorders: The tickers to report, in column order.
    ///   - fileDescriptor: Where to write (standard output, or standard error under `--json`).
    ///   - style: In place on a terminal, or plain lines.
    init(recorders: [LatencyRecorder], fileDescriptor: Int32, style: Style) {
        self.painter = Painter(
            recorders: recorders, fileDescriptor: fileDescriptor, style: style,
            startedAt: MonotonicInstant.now())
        self.period = style == .terminal ? .milliseconds(250) : .seconds(1)
        self.timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "example-ticker.progress"))
    }

    deinit {
        self.timer.cancel()
        self.timer.activate()  // Harmless if started; Dispatch traps on releasing a never-activated source.
    }

    /// Starts redrawing.
    func start() {
        let painter = self.painter
        self.timer.setEventHandler { painter.draw(final: false) }
        self.timer.schedule(deadline: .now() + self.period, repeating: self.period)
        self.timer.activate()
    }

    /// Stops redrawing and draws the final state (on a terminal, the line is then ended).
    func finish() {
        self.timer.cancel()
        self.painter.draw(final: true)
    }
}
