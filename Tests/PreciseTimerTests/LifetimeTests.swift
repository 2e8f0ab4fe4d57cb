import Dispatch
import Glibc
import PreciseTimer
import PreciseTimerTesting
import PreciseTimerReference
import Testing

/// The NSTimer leak scenarios, on both implementations: does the owner deallocate?
@Suite("Lifetime")
struct LifetimeTests {
    /// An owner whose timers do things to it.
    final class Owner: Sendable {
        let calls = Recorder<UInt64>()
        func poll(_ tick: Tick) { self.calls.append(tick.count) }
    }

    /// An owner that holds its timer by token, the way a daemon object would.
    final class TokenOwner: Sendable {
        let token: TimerToken
        init(timers: any TimerService, calls: Recorder<UInt64>) throws {
            self.token = try timers.scheduleTimer(.every(.milliseconds(1))) { tick in calls.append(tick.count) }
                .token(on: timers)
        }
    }

    enum Ending: String, CaseIterable, CustomStringConvertible, Sendable {
        case cancel, cancelAll, shutdown, oneShotFired
        var description: String { self.rawValue }
    }

    @Test(
        "a handler capturing its owner strongly keeps it alive until the timer ends",
        arguments: Implementation.allCases, Ending.allCases)
    func strongCapture(_ implementation: Implementation, ending: Ending) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var owner: Owner? = Owner()
        let probe = WeakProbe(owner!)
        let calls = owner!.calls
        let id: TimerID
        if ending == .oneShotFired {
            id = try timers.schedule(after: .milliseconds(20)) { [owner] tick in owner!.poll(tick) }
        } else {
            id = try timers.scheduleRepeating(every: .milliseconds(2)) { [owner] tick in owner!.poll(tick) }
        }
        owner = nil
        await calls.wait(forCount: 1)
        if ending != .oneShotFired {
            #expect(!probe.isReleased, "documented: a strongly captured owner lives while the timer is scheduled")
        }
        switch ending {
        case .cancel: #expect(timers.cancel(id))
        case .cancelAll: timers.cancelAll()
        case .shutdown: timers.shutdown()
        case .oneShotFired: break
        }
        #expect(await calls.wait(timeout: .seconds(5)) { _ in probe.isReleased }, "owner still alive after \(ending)")
    }

    @Test(
        "weak target: the owner deallocates, the timer removes itself, the action stops",
        arguments: Implementation.allCases)
    func weakTarget(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        var owner: Owner? = Owner()
        let probe = WeakProbe(owner!)
        let calls = owner!.calls
        let id = try timers.scheduleRepeating(every: .milliseconds(2), target: owner!) { owner, tick in
            owner.poll(tick)
        }
        await calls.wait(forCount: 2)
        owner = nil
        #expect(await calls.wait(timeout: .seconds(5)) { _ in probe.isReleased })
        #expect(await calls.wait(timeout: .seconds(5)) { _ in !timers.isScheduled(id) })
        let count = calls.count
        await pause(Bounds.quiet)
        #expect(calls.count == count, "the action ran after its target was gone")
    }

    @Test("token: releasing the owner cancels the timer at once", arguments: Implementation.allCases)
    func token(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let calls = Recorder<UInt64>()
        var owner: TokenOwner? = try TokenOwner(timers: timers, calls: calls)
        let probe = WeakProbe(owner!)
        let id = owner!.token.id
        await calls.wait(forCount: 3)
        owner = nil
        #expect(probe.isReleased)
        #expect(!timers.isScheduled(id), "the token's deinit must cancel synchronously")
        let count = calls.count
        await pause(Bounds.quiet)
        #expect(calls.count <= count + 1, "at most the call already under way may finish")
    }

    @Test(
        "token released on the timer's own thread: not one call after, no call in flight to excuse",
        arguments: Implementation.allCases)
    func tokenReleasedOnTimerThread(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        let calls = Recorder<UInt64>()
        let holder = SemaphoreGuarded<TokenOwner?>(try TokenOwner(timers: timers, calls: calls))
        let probe = holder.withLock { WeakProbe($0!) }
        let id = holder.withLock { $0!.token.id }
        await calls.wait(forCount: 3)
        let callsAtRelease = Recorder<Int>()
        // `.loop` handlers run one at a time on the service's thread (libevent) or serial queue
        // (Dispatch), so while this one runs no call of the token's timer is under way.
        try timers.schedule(after: .zero) { _ in
            holder.withLock { $0 = nil }
            callsAtRelease.append(calls.count)
        }
        let count = try #require(await callsAtRelease.wait(forCount: 1).first)
        #expect(probe.isReleased)
        #expect(!timers.isScheduled(id))
        await pause(Bounds.quiet)
        #expect(calls.count == count, "the timer fired after its token was released")
    }

    @Test("a token outliving its service does nothing; cancel() is idempotent", arguments: Implementation.allCases)
    func tokenOutlivesService(_ implementation: Implementation) throws {
        var timers: (any TimerService)? = try implementation.make()
        let token = try timers!.scheduleTimer(.after(.seconds(60))) { _ in }.token(on: timers!)
        #expect(token.cancel())
        #expect(!token.cancel())
        timers = nil
        #expect(!token.cancel())
    }

    @Test(
        "a refused schedule releases its handler outside the lock: a token inside it may cancel",
        arguments: Implementation.allCases)
    func refusedHandlerReleasedOutsideLock(_ implementation: Implementation) async throws {
        let timers = try implementation.make()
        defer { timers.shutdown() }
        try timers.schedule(id: "taken", after: .seconds(3_600)) { _ in }
        let victim = try timers.scheduleTimer(.after(.seconds(3_600))) { _ in }
        let outcome = Recorder<String>()
        detachThread {
            do {
                // The closure holds the only reference to the token; refusing it releases the
                // token, whose deinit calls cancel on the same service.
                try timers.schedule(id: "taken", after: .seconds(1)) { [token = victim.token(on: timers)] _ in
                    _ = token
                }
                outcome.append("scheduled")
            } catch {
                outcome.append("\((error as? PreciseTimerError)?.code.description ?? "\(error)")")
            }
        }
        #expect(await outcome.wait(forCount: 1, timeout: .seconds(5)) == ["duplicateID"], "deadlocked or not refused")
        #expect(!timers.isScheduled(victim.id))
    }

    @Test("a one-shot that never fired is released by shutdown", arguments: Implementation.allCases)
    func unfiredOneShot(_ implementation: Implementation) throws {
        let timers = try implementation.make()
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        try timers.schedule(after: .seconds(3_600)) { [canary] _ in _ = canary }
        canary = nil
        #expect(!probe.isReleased)
        timers.shutdown()
        #expect(probe.isReleased)
    }

    @Test(
        "a service released without shutdown releases every handler (and stops its thread)",
        arguments: Implementation.allCases)
    func releasedWithoutShutdown(_ implementation: Implementation) async throws {
        let threadName = "pt-lifetime"
        var timers: (any TimerService)? =
            switch implementation {
            case .libevent: try PreciseTimer(configuration: .init(threadName: threadName))
            case .dispatch, .virtual: try implementation.make()
            }
        var canaries: [Canary]? = [Canary(), Canary()]
        let probes = canaries!.map(WeakProbe.init)
        let ticked = Recorder<Bool>()
        try timers!.schedule(after: .seconds(3_600)) { [canaries] _ in _ = canaries }
        try timers!.scheduleRepeating(every: .milliseconds(1)) { [canaries] _ in
            _ = canaries
            ticked.append(true)
        }
        canaries = nil
        await ticked.wait(forCount: 1)
        if implementation == .libevent { #expect(Self.threadCount(named: threadName) == 1) }
        timers = nil
        // At once, or (Dispatch) the moment a call already running on its queue returns.
        #expect(await ticked.wait(timeout: .seconds(5)) { _ in probes.allSatisfy { $0.isReleased } })
        if implementation == .libevent {
            #expect(await ticked.wait(timeout: .seconds(5)) { _ in Self.threadCount(named: threadName) == 0 })
        }
    }

    /// Threads of this process with this name, from /proc.
    static func threadCount(named name: String) -> Int {
        guard let directory = opendir("/proc/self/task") else { return -1 }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let task = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let file = fopen("/proc/self/task/\(task)/comm", "r") else { continue }
            var buffer = [CChar](repeating: 0, count: 64)
            if fgets(&buffer, 64, file) != nil {
                let comm = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                if comm.trimmingNewline == name { count += 1 }
            }
            fclose(file)
        }
        return count
    }
}

extension String {
    fileprivate var trimmingNewline: String {
        self.hasSuffix("\n") ? String(self.dropLast()) : self
    }
}
