import Dispatch
import PreciseTimer
import PreciseTimerCompat
import PreciseTimerTesting
import Testing

/// Every bad input, on both implementations: a typed error or a documented no-op, and nothing
/// half-registered afterwards (the registry unchanged, the refused handler released at once, the
/// timer already registered under the same ID untouched).
@Suite("Bad input matrix")
struct BadInputMatrixTests {
    /// What a call must do.
    enum Outcome: CustomStringConvertible, Sendable {
        case throwsCode(PreciseTimerError.Code)
        case noOp
        var description: String {
            switch self {
            case .throwsCode(let code): "throws .\(code)"
            case .noOp: "no-op"
            }
        }
    }

    /// One row: a call made with a fresh ``Canary`` to capture in whatever it hands the service.
    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let expected: Outcome
        let call: @Sendable (any TimerService, Canary) throws -> Void
        var description: String { "\(self.name): \(self.expected)" }

        init(
            _ name: String, _ expected: Outcome,
            _ call: @escaping @Sendable (any TimerService, Canary) throws -> Void
        ) {
            self.name = name
            self.expected = expected
            self.call = call
        }
    }

    /// A handler that holds `canary` until the service releases it.
    static func handler(_ canary: Canary) -> @Sendable (Tick) -> Void {
        { _ in _ = canary }
    }

    static let tooLong = PreciseTimer.maximumDuration + .nanoseconds(1)
    static let minusOneAttosecond = Duration(secondsComponent: 0, attosecondsComponent: -1)

    static let delays: [Case] = [
        Case("negative delay", .throwsCode(.invalidDelay)) { try $0.schedule(after: .nanoseconds(-1), handler($1)) },
        Case("delay of -1 attosecond", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: minusOneAttosecond, handler($1))
        },
        Case("delay of Int64.min ns", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: .nanoseconds(Int64.min), handler($1))
        },
        Case("delay 1 ns beyond maximumDuration", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: tooLong, handler($1))
        },
        Case("delay of Int64.max seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: .seconds(Int64.max), handler($1))
        },
        Case("delay of Int64.min seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: .seconds(Int64.min), handler($1))
        },
        // Beyond Int64.max seconds `Duration.components` traps; the conversion must not use it.
        Case("delay of Int128.max attoseconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration(attoseconds: .max), handler($1))
        },
        Case("negative first delay", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: .seconds(-1), handler($1))
        },
        Case("first delay beyond maximumDuration", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: tooLong, handler($1))
        },
        Case("first delay of Int64.max seconds", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: .seconds(Int64.max), handler($1))
        },
    ]

    static let intervals: [Case] = [
        Case("zero interval", .throwsCode(.invalidInterval)) { try $0.scheduleRepeating(every: .zero, handler($1)) },
        Case("negative interval", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .milliseconds(-1), handler($1))
        },
        Case("interval of -1 attosecond", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: minusOneAttosecond, handler($1))
        },
        Case("interval 1 ns beyond maximumDuration", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: tooLong, handler($1))
        },
        Case("interval of Int64.max seconds", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .seconds(Int64.max), handler($1))
        },
        Case("interval of Int64.min seconds", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .seconds(Int64.min), handler($1))
        },
        Case("interval of Int128.min attoseconds", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: Duration(attoseconds: .min), handler($1))
        },
        Case("interval of 1 attosecond, below minimumInterval", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: Duration(secondsComponent: 0, attosecondsComponent: 1), handler($1))
        },
        Case("interval 1 ns below minimumInterval", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: PreciseTimer.minimumInterval - .nanoseconds(1), handler($1))
        },
        Case("zero interval with a valid first delay", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .zero, startingAfter: .seconds(1), handler($1))
        },
    ]

    /// Seconds from a configuration file, converted the documented way.
    static let seconds: [Case] = [
        Case("NaN seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.nan), handler($1))
        },
        Case("signalling NaN seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.signalingNaN), handler($1))
        },
        Case("+infinity seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.infinity), handler($1))
        },
        Case("-infinity seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(-.infinity), handler($1))
        },
        Case("-0.5 seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(-0.5), handler($1))
        },
        Case("1e300 seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(1e300), handler($1))
        },
        Case("Double.greatestFiniteMagnitude seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.greatestFiniteMagnitude), handler($1))
        },
        Case("NaN seconds as a first delay", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: Duration.checkedSeconds(.nan), handler($1))
        },
        Case("NaN seconds as an interval", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: Duration.checkedSeconds(.nan), handler($1))
        },
    ]

    static let ids: [Case] = [
        Case("empty ID", .throwsCode(.emptyID)) { try $0.schedule(id: "", after: .seconds(1), handler($1)) },
        Case("empty ID, repeating", .throwsCode(.emptyID)) {
            try $0.scheduleRepeating(id: "", every: .seconds(1), handler($1))
        },
        Case("duplicate ID", .throwsCode(.duplicateID)) {
            try $0.schedule(id: "taken", after: .seconds(1), handler($1))
        },
        Case("duplicate ID, repeating", .throwsCode(.duplicateID)) {
            try $0.scheduleRepeating(id: "taken", every: .seconds(1), handler($1))
        },
        Case("duplicate ID with a zero delay", .throwsCode(.duplicateID)) {
            try $0.schedule(id: "taken", after: .zero, handler($1))
        },
    ]

    /// The adapters validate through the same requirements.
    static let adapters: [Case] = [
        Case("weak target, negative delay", .throwsCode(.invalidDelay)) { timers, canary in
            try timers.schedule(after: .seconds(-1), target: canary) { _, _ in }
        },
        Case("weak target, zero interval", .throwsCode(.invalidInterval)) { timers, canary in
            try timers.scheduleRepeating(every: .zero, target: canary) { _, _ in }
        },
        Case("weak target, empty ID", .throwsCode(.emptyID)) { timers, canary in
            try timers.schedule(id: "", after: .seconds(1), target: canary) { _, _ in }
        },
        Case("weak target, duplicate ID", .throwsCode(.duplicateID)) { timers, canary in
            try timers.scheduleRepeating(id: "taken", every: .seconds(1), target: canary) { _, _ in }
        },
        Case("execTask, NaN start", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: .nan, interval: 1, repeats: true, async: true))
        },
        Case("execTask, negative start", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: -1, interval: 0, repeats: false, async: false))
        },
        Case("execTask, repeating with zero interval", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: 0, interval: 0, repeats: true, async: false))
        },
        Case("execTask, repeating with negative interval", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: 0, interval: -1, repeats: true, async: true))
        },
        Case("execTask, infinite interval", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: 0, interval: .infinity, repeats: true, async: false))
        },
        Case("explicit ID of the generated form", .throwsCode(.reservedID)) {
            try $0.schedule(id: "timer-1", after: .seconds(1), handler($1))
        },
        Case("explicit ID of the generated form, repeating", .throwsCode(.reservedID)) {
            try $0.scheduleRepeating(id: "timer-0042", every: .seconds(1), handler($1))
        },
        Case("execTask, 1e300 s start", .noOp) { timers, canary in
            try expectNil(timers.execTask({ _ = canary }, start: 1e300, interval: 1, repeats: false, async: false))
        },
        Case("execTask with a target, NaN start", .noOp) { timers, canary in
            try expectNil(
                timers.execTask(target: canary, action: { _ in }, start: .nan, interval: 1, repeats: true, async: false)
            )
        },
        Case("execTask with a target, zero interval", .noOp) { timers, canary in
            try expectNil(
                timers.execTask(target: canary, action: { _ in }, start: 0, interval: 0, repeats: true, async: true))
        },
    ]

    static let cancels: [Case] = [
        Case("cancel of an unknown ID", .noOp) { timers, _ in try expectFalse(timers.cancel("never-scheduled")) },
        Case("cancel of an empty ID", .noOp) { timers, _ in try expectFalse(timers.cancel("")) },
        Case("cancel of a 100 kB unknown ID", .noOp) { timers, _ in
            try expectFalse(timers.cancel(TimerID(String(repeating: "z", count: 100_000))))
        },
        Case("cancel of an ID differing only in case", .noOp) { timers, _ in try expectFalse(timers.cancel("TAKEN")) },
        Case("cancelTask(nil), empty and unknown", .noOp) { timers, _ in
            timers.cancelTask(nil)
            timers.cancelTask("")
            timers.cancelTask("nope")
        },
        Case("token for an unknown ID", .noOp) { timers, _ in
            let token = TimerHandle(id: "never-scheduled", generation: 0).token(on: timers)  // 0: never given
            try expectFalse(token.cancel())
        },
    ]

    static let cases = delays + intervals + seconds + ids + adapters + cancels

    struct Unexpected: Error {}

    static func expectNil(_ name: String?) throws {
        if name != nil { throw Unexpected() }
    }

    static func expectFalse(_ value: Bool) throws {
        if value { throw Unexpected() }
    }

    @Test(
        "each bad input gives its typed error or documented no-op, and registers nothing",
        arguments: Implementation.untimed, Self.cases)
    func badInput(_ implementation: Implementation, _ badCase: Case) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let takenCanary = Canary()
        let taken = WeakProbe(takenCanary)
        try timers.schedule(id: "taken", after: .seconds(3_600), Self.handler(takenCanary))
        var canary: Canary? = Canary()
        let refused = WeakProbe(canary!)
        switch badCase.expected {
        case .throwsCode(let code):
            #expect {
                try badCase.call(timers, canary!)
            } throws: { error in
                guard let error = error as? PreciseTimerError, error.code == code else { return false }
                // The error names what was wrong: the ID for ID errors, the value for the rest.
                return error.id != nil || error.value != nil
            }
        case .noOp:
            #expect(throws: Never.self) { try badCase.call(timers, canary!) }
        }
        canary = nil
        #expect(timers.scheduledIDs == ["taken"], "\(badCase) left \(timers.scheduledIDs)")
        #expect(refused.isReleased, "the service kept the refused call's handler")
        #expect(!taken.isReleased, "the timer already under that ID lost its handler")
        #expect(timers.cancel("taken"), "the timer already under that ID was removed")
    }

    @Test("the edges that are valid: maximumDuration, sub-nanosecond, -0.0 s", arguments: Implementation.allCases)
    func validEdges(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let longest = try timers.schedule(after: PreciseTimer.maximumDuration) { _ in }
        let longestRepeat = try timers.scheduleRepeating(
            every: PreciseTimer.maximumDuration, startingAfter: PreciseTimer.maximumDuration
        ) { _ in }
        #expect(timers.cancel(longest))
        #expect(timers.cancel(longestRepeat))
        #expect(try Duration.checkedSeconds(-0.0) == .zero)
        let fired = Recorder<TimerID>()
        let oneAttosecond = Duration(secondsComponent: 0, attosecondsComponent: 1)
        try timers.schedule(id: "attosecond", after: oneAttosecond) { fired.append($0.id) }
        try timers.schedule(id: "minus zero", after: Duration.checkedSeconds(-0.0)) { fired.append($0.id) }
        // The shortest legal interval; the skip policy keeps it from storming.
        try timers.scheduleRepeating(id: "microsecond", every: PreciseTimer.minimumInterval) { tick in
            if tick.count == 3 { timers.cancel(tick.id) }
            if tick.count <= 3 { fired.append(tick.id) }
        }
        #expect(Set(await fired.wait(forCount: 5)) == ["attosecond", "minus zero", "microsecond"])
        #expect(await fired.wait(timeout: .seconds(5)) { _ in timers.scheduledIDs.isEmpty })
    }

}

extension String {
    var asID: TimerID { TimerID(self) }
}
