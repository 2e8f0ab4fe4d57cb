import PreciseTimerCalendar
import PreciseTimerCore
import Testing

/// Failing input never traps, and large input takes linear time: a daemon reads its config
/// files with these parsers.
@Suite("time spans and timer units: absurd input")
struct UnitParserRobustnessTests {
    /// A fixed xorshift generator: the same inputs on every run.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            self.state ^= self.state << 13
            self.state ^= self.state >> 7
            self.state ^= self.state << 17
            return self.state
        }
    }

    static let spanPieces = [
        "0", "1", "9", "42", ".", "..", "-", "+", " ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{0}", "s", "ms", "us",
        "µs", "μs", "µ", "min", "m", "M", "h", "hr", "d", "w", "y", "years", "infinity", "inf", "x", "é",
        "99999999999999999999", "9223372036854775807", "0.000000001", "\u{FEFF}", "\u{301}",
    ]

    static let unitPieces = [
        "[Timer]", "[Unit]", "[Install]", "[X-A]", "[", "]", "=", "==", "#", ";", "\\", "\\\\", "\n", "\r", "\r\n",
        " ", "\t", "\u{0}", "\u{FEFF}", "%", "%%", "%i", "OnCalendar", "OnBootSec", "Persistent", "Unit", "X-Y",
        "AccuracySec", "daily", "Mon..Fri 09:00", "*-*-* 25:00", "1h 30min", "yes", "maybe", "infinity", "a.service",
    ]

    @Test("10 000 random spans: a Duration or .invalidDelay with the input, never a trap")
    func randomSpans() {
        var generator = Generator(state: 0x2024_1126)
        for _ in 0..<10_000 {
            let text = (0..<Int.random(in: 0...6, using: &generator)).map { _ in
                Self.spanPieces.randomElement(using: &generator)!
            }.joined()
            do {
                let duration = try Duration(systemdTimeSpan: text)
                #expect(duration >= .zero)
            } catch {
                #expect(error.code == .invalidDelay && error.value == text && error.detail != nil)
            }
        }
    }

    @Test("5 000 random unit files: a TimerUnit or .invalidSchedule naming a line, never a trap")
    func randomUnits() {
        var generator = Generator(state: 0x7133_2024)
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 0...14, using: &generator)).map { _ in
                Self.unitPieces.randomElement(using: &generator)!
            }.joined()
            do {
                let unit = try TimerUnit(text)
                // What is accepted has a description that reads back.
                #expect((try? TimerUnit(unit.description))?.description == unit.description, "\(text.debugDescription)")
            } catch {
                #expect(error.code == .invalidSchedule)
                #expect(error.detail?.hasPrefix("line") == true || error.detail?.hasPrefix("no trigger") == true)
            }
        }
    }

    @Test("large input is linear: a 150 kB span, 100 kB of digits, 30 000 continued lines, 10 000 triggers")
    func largeInput() throws {
        let clock = ContinuousClock()
        let start = clock.now
        let many = String(repeating: "1s ", count: 50_000)
        #expect(try Duration(systemdTimeSpan: many) == .seconds(50_000))
        #expect(throws: PreciseTimerError.self) {
            try Duration(systemdTimeSpan: String(repeating: "9", count: 100_000))
        }
        let continued = "[Timer]\nOnBootSec=1s \\\n" + String(repeating: "1s \\\n", count: 30_000) + "\n"
        #expect(try TimerUnit(continued).onBoot == [.seconds(30_001)])
        let triggers = "[Timer]\n" + String(repeating: "OnActiveSec=1h 30min\n", count: 10_000)
        #expect(try TimerUnit(triggers).onActive.count == 10_000)
        // Generous: a debug build on a shared machine; quadratic work would take minutes.
        #expect(clock.now - start < .seconds(20))
    }
}
