import Dispatch
import PreciseTimer
import Testing

/// Every bad input, on both implementations: a typed error or a documented no-op, and nothing
/// half-registered afterwards.
@Suite("Bad input matrix")
struct BadInputMatrixTests {
    /// What a call must do.
    enum Outcome: CustomStringConvertible {
        case throwsCode(PreciseTimerError.Code)
        case noOp
        var description: String {
            switch self {
            case .throwsCode(let code): "throws .\(code)"
            case .noOp: "no-op"
            }
        }
    }

    struct Case: CustomStringConvertible, Sendable {
        let name: String
        let expected: @Sendable () -> Outcome
        let call: @Sendable (any TimerService) throws -> Void
        var description: String { self.name }

        init(
            _ name: String, _ expected: @autoclosure @escaping @Sendable () -> Outcome,
            _ call: @escaping @Sendable (any TimerService) throws -> Void
        ) {
            self.name = name
            self.expected = expected
            self.call = call
        }
    }

    static let noop: @Sendable (Tick) -> Void = { _ in }
    static let tooLong = PreciseTimer.maximumDuration + .nanoseconds(1)

    static let cases: [Case] = [
        Case("negative delay", .throwsCode(.invalidDelay)) { try $0.schedule(after: .nanoseconds(-1), Self.noop) },
        Case("delay beyond the clock", .throwsCode(.invalidDelay)) { try $0.schedule(after: Self.tooLong, Self.noop) },
        Case("Int64.max seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: .seconds(Int64.max), Self.noop)
        },
        Case("negative first delay", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: .seconds(-1), Self.noop)
        },
        Case("first delay beyond the clock", .throwsCode(.invalidDelay)) {
            try $0.scheduleRepeating(every: .seconds(1), startingAfter: Self.tooLong, Self.noop)
        },
        Case("zero interval", .throwsCode(.invalidInterval)) { try $0.scheduleRepeating(every: .zero, Self.noop) },
        Case("negative interval", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .milliseconds(-1), Self.noop)
        },
        Case("interval beyond the clock", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: Self.tooLong, Self.noop)
        },
        Case("Int64.max-second interval", .throwsCode(.invalidInterval)) {
            try $0.scheduleRepeating(every: .seconds(Int64.max), Self.noop)
        },
        Case("NaN seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.nan), Self.noop)
        },
        Case("infinite seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(.infinity), Self.noop)
        },
        Case("-0.5 seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(-0.5), Self.noop)
        },
        Case("1e300 seconds", .throwsCode(.invalidDelay)) {
            try $0.schedule(after: Duration.checkedSeconds(1e300), Self.noop)
        },
        Case("empty ID", .throwsCode(.emptyID)) { try $0.schedule(id: "", after: .seconds(1), Self.noop) },
        Case("empty ID, repeating", .throwsCode(.emptyID)) {
            try $0.scheduleRepeating(id: "", every: .seconds(1), Self.noop)
        },
        Case("duplicate ID", .throwsCode(.duplicateID)) { try $0.schedule(id: "taken", after: .seconds(1), Self.noop) },
        Case("duplicate ID, repeating", .throwsCode(.duplicateID)) {
            try $0.scheduleRepeating(id: "taken", every: .seconds(1), Self.noop)
        },
        Case("cancel of an unknown ID", .noOp) { guard !$0.cancel("never-scheduled") else { throw Unexpected() } },
        Case("cancel of an empty ID", .noOp) { guard !$0.cancel("") else { throw Unexpected() } },
        Case("cancelTask(nil) and unknown", .noOp) {
            $0.cancelTask(nil)
            $0.cancelTask("nope")
        },
        Case("execTask with NaN start", .noOp) {
            try Self.expectNil($0.execTask({}, start: .nan, interval: 1, repeats: true, async: true))
        },
        Case("execTask with negative start", .noOp) {
            try Self.expectNil($0.execTask({}, start: -1, interval: 0, repeats: false, async: false))
        },
        Case("execTask repeating with zero interval", .noOp) {
            try Self.expectNil($0.execTask({}, start: 0, interval: 0, repeats: true, async: false))
        },
        Case("execTask with infinite interval", .noOp) {
            try Self.expectNil($0.execTask({}, start: 0, interval: .infinity, repeats: true, async: false))
        },
    ]

    struct Unexpected: Error {}

    static func expectNil(_ name: String?) throws {
        if name != nil { throw Unexpected() }
    }

    @Test(
        "each bad input gives its typed error or documented no-op, and registers nothing",
        arguments: Implementation.allCases, Self.cases)
    func badInput(_ implementation: Implementation, _ badCase: Case) throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        try timers.schedule(id: "taken", after: .seconds(60), Self.noop)
        switch badCase.expected() {
        case .throwsCode(let code):
            #expect { try badCase.call(timers) } throws: { error in
                (error as? PreciseTimerError)?.code == code
            }
        case .noOp:
            #expect(throws: Never.self) { try badCase.call(timers) }
        }
        #expect(timers.scheduledIDs == ["taken"], "\(badCase) left \(timers.scheduledIDs)")
    }

    @Test("odd and very long IDs are valid: they schedule, fire and cancel", arguments: Implementation.allCases)
    func oddIDs(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let ids: [TimerID] = [
            "e\u{301}", "🧪⏱️", "שָׁלוֹם", "a\u{0}b", "\u{200B}", String(repeating: "x", count: 100_000).asID,
            "timer-1",
        ]
        let fired = Recorder<TimerID>()
        for id in ids {
            // Long enough that none fires before the registry is inspected, even on a loaded machine.
            try timers.schedule(id: id, after: .milliseconds(500)) { fired.append($0.id) }
        }
        // IDs compare as Swift strings, by canonical equivalence: precomposed "é" is the same ID.
        try timers.schedule(id: "cafe\u{301}", after: .seconds(60), Self.noop)
        #expect { try timers.schedule(id: "caf\u{E9}", after: .seconds(1), Self.noop) } throws: {
            ($0 as? PreciseTimerError)?.code == .duplicateID
        }
        #expect(timers.cancel("caf\u{E9}"))
        #expect(Set(timers.scheduledIDs) == Set(ids))
        let received = await fired.wait(forCount: ids.count)
        #expect(Set(received) == Set(ids))
        let long = String(repeating: "y", count: 100_000).asID
        try timers.schedule(id: long, after: .seconds(60), Self.noop)
        #expect(timers.isScheduled(long))
        #expect(timers.cancel(long))
        #expect(!timers.cancel(long))
    }

    @Test(
        "every call after shutdown: schedules throw .shutDown, the rest are no-ops",
        arguments: Implementation.allCases)
    func afterShutdown(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        let id = try timers.schedule(after: .seconds(60), Self.noop)
        timers.shutdown()
        timers.shutdown()
        for call in [
            { try timers.schedule(after: .zero, Self.noop) },
            { try timers.schedule(id: "x", after: .zero, Self.noop) },
            { try timers.scheduleRepeating(every: .seconds(1), Self.noop) },
            { try timers.schedule(after: .zero, target: Canary()) { _, _ in } },
        ] as [() throws -> TimerID] {
            #expect { _ = try call() } throws: { ($0 as? PreciseTimerError)?.code == .shutDown }
        }
        #expect(timers.execTask({}, start: 0, interval: 0, repeats: false, async: false) == nil)
        #expect(!timers.cancel(id))
        timers.cancelAll()
        timers.cancelTask(id.rawValue)
        #expect(!timers.isScheduled(id))
        #expect(timers.scheduledIDs.isEmpty)
    }

    @Test("shutdown from two threads at once, twice each, returns everywhere", arguments: Implementation.allCases)
    func concurrentShutdown(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        for _ in 0..<100 { try timers.scheduleRepeating(every: .milliseconds(1), Self.noop) }
        let returned = Recorder<Int>()
        for thread in 0..<2 {
            DispatchQueue.global().async {
                timers.shutdown()
                timers.shutdown()
                returned.append(thread)
            }
        }
        #expect(await returned.wait(forCount: 2, timeout: .seconds(10)).count == 2)
        #expect(timers.scheduledIDs.isEmpty)
    }
}

extension String {
    fileprivate var asID: TimerID { TimerID(self) }
}
