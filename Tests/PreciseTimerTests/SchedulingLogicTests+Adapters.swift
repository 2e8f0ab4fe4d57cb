import PreciseTimer
import PreciseTimerCompat
import PreciseTimerTesting
import Testing

extension SchedulingLogicTests {
    /// The loop picks the shard whose head it last saw first; that head may have been moved later
    /// (left filed early) or cancelled since. A late loop then found that shard's next timer due
    /// and fired it, ahead of an earlier timer in another shard.
    @Test(
        "a late loop fires in deadline order across shards after the head it saw in one was moved later or cancelled",
        arguments: ["moved later", "cancelled"])
    func lateLoopAfterStaleHead(_ change: String) throws {
        let driver = ManualTimerDriver()
        let timers = driver.timers
        let fired = Recorder<String>()
        // Generated IDs go round the shards: `first` and `third`, 64 timers apart, share one.
        let first = try timers.scheduleTimer(.after(.milliseconds(100)), id: nil, options: .init()) { _ in
            fired.append("first")
        }
        try timers.scheduleTimer(.after(.milliseconds(150)), id: nil, options: .init()) { _ in fired.append("second") }
        for _ in 0..<(TimerCore.shardCount - 2) {
            try timers.scheduleTimer(.after(.seconds(3_600)), id: nil, options: .init()) { _ in }
        }
        let third = try timers.scheduleTimer(.after(.milliseconds(200)), id: nil, options: .init()) { _ in
            fired.append("third")
        }
        #expect(third.generation == first.generation + UInt64(TimerCore.shardCount))
        driver.advance(by: .milliseconds(10))  // The loop looks at every shard.
        if change == "cancelled" {
            #expect(timers.cancel(first))
        } else {
            #expect(try timers.reschedule(first.id, after: .milliseconds(290)))
        }
        driver.stall(for: .milliseconds(240))  // Late: at 250 ms, "second" and "third" are both due.
        #expect(fired.values == ["second", "third"])
        driver.advance(by: .milliseconds(100))
        #expect(fired.values == (change == "cancelled" ? ["second", "third"] : ["second", "third", "first"]))
    }

    @Test("cancel from the own handler stops it; cancel of a co-due timer stops that one too")
    func cancelInsideHandlers() throws {
        let driver = ManualTimerDriver()
        let timers = driver.timers
        let fired = Recorder<TimerID>()
        try timers.scheduleRepeating(id: "self", every: .milliseconds(1)) { tick in
            fired.append(tick.id)
            #expect(timers.cancel(tick.id))
            #expect(!timers.cancel(tick.id))
        }
        try timers.schedule(id: "killer", after: .milliseconds(5)) { tick in
            fired.append(tick.id)
            timers.cancel("victim")
        }
        try timers.schedule(id: "victim", after: .milliseconds(5)) { fired.append($0.id) }
        driver.advance(by: .milliseconds(20))
        #expect(fired.values == ["self", "killer"])
        #expect(timers.scheduledIDs.isEmpty)
    }

    @Test("cancelAll ends every timer and releases every handler; the service stays usable")
    func cancelAll() throws {
        let driver = ManualTimerDriver()
        var canary: Canary? = Canary()
        let probe = WeakProbe(canary!)
        let fired = Recorder<TimerID>()
        try driver.timers.scheduleRepeating(id: "r", every: .milliseconds(1)) { [canary] in
            _ = canary
            fired.append($0.id)
        }
        try driver.timers.schedule(id: "o", after: .milliseconds(1)) { fired.append($0.id) }
        canary = nil
        driver.timers.cancelAll()
        #expect(probe.isReleased)
        #expect(driver.timers.scheduledIDs.isEmpty)
        driver.advance(by: .milliseconds(5))
        #expect(fired.count == 0)
        try driver.timers.schedule(id: "o", after: .milliseconds(1)) { fired.append($0.id) }
        driver.advance(by: .milliseconds(5))
        #expect(fired.values == ["o"])
    }

    @Test("the weak-target adapter passes the target, and cancels itself once it is gone")
    func weakTarget() throws {
        let driver = ManualTimerDriver()
        var target: Canary? = Canary()
        let probe = WeakProbe(target!)
        let calls = Recorder<UInt64>()
        let id = try driver.timers.scheduleRepeating(every: .milliseconds(10), target: target!) { _, tick in
            calls.append(tick.count)
        }
        driver.advance(by: .milliseconds(20))
        #expect(calls.values == [1, 2])
        target = nil
        #expect(probe.isReleased, "the timer must not keep its target alive")
        #expect(driver.timers.isScheduled(id))
        driver.advance(by: .milliseconds(10))
        #expect(!driver.timers.isScheduled(id))
        driver.advance(by: .milliseconds(50))
        #expect(calls.values == [1, 2])
    }

    @Test("a one-shot weak-target timer skips its action when the target is gone")
    func weakTargetOneShot() throws {
        let driver = ManualTimerDriver()
        var target: Canary? = Canary()
        let calls = Recorder<UInt64>()
        try driver.timers.schedule(after: .milliseconds(10), target: target!) { _, tick in calls.append(tick.count) }
        target = nil
        driver.advance(by: .milliseconds(20))
        #expect(calls.count == 0)
        #expect(driver.timers.scheduledIDs.isEmpty)
    }

    @Test("execTask: valid values schedule with fresh names, bad values schedule nothing")
    func execTask() throws {
        let driver = ManualTimerDriver()
        let timers = driver.timers
        let runs = Recorder<String>()
        let maybeOnce = timers.execTask(
            { runs.append("once") }, start: 0.005, interval: 0, repeats: false, async: false)
        let maybeEvery = timers.execTask(
            { runs.append("every") }, start: 0, interval: 0.01, repeats: true, async: false)
        let once = try #require(maybeOnce)
        let every = try #require(maybeEvery)
        #expect(once != every)
        for (start, interval, repeats) in [
            (-1.0, 1.0, true), (.nan, 1, false), (1, .infinity, true), (1, 0, true),
            (1, -1, true), (1e300, 1, false),
        ] {
            #expect(
                timers.execTask({}, start: start, interval: interval, repeats: repeats, async: false) == nil,
                "start \(start), interval \(interval), repeats \(repeats)")
        }
        driver.advance(by: .milliseconds(25))
        #expect(runs.values == ["every", "once", "every", "every"])
        timers.cancelTask(every)
        timers.cancelTask(nil)
        timers.cancelTask("no-such-task")
        #expect(timers.scheduledIDs.isEmpty)
        let maybeNext = timers.execTask({}, start: 1, interval: 0, repeats: false, async: false)
        let next = try #require(maybeNext)
        #expect(next != once && next != every)
    }

    @Test("execTask with a target holds it weakly")
    func execTaskTarget() throws {
        let driver = ManualTimerDriver()
        var target: Canary? = Canary()
        let probe = WeakProbe(target!)
        let runs = Recorder<Int>()
        let name = driver.timers.execTask(
            target: target!, action: { _ in runs.append(1) }, start: 0.01,
            interval: 0.01, repeats: true, async: false)
        driver.advance(by: .milliseconds(10))
        target = nil
        #expect(probe.isReleased)
        driver.advance(by: .milliseconds(30))
        #expect(runs.count == 1)
        #expect(!driver.timers.isScheduled(TimerID(try #require(name))))
    }

    @Test("a new timer earlier than the loop's next wake-up rings the doorbell once")
    func wakeUps() throws {
        let driver = ManualTimerDriver()
        try driver.timers.schedule(after: .milliseconds(10)) { _ in }
        let afterFirst = driver.wakes
        driver.advance(by: .zero)  // the loop now sleeps until 10 ms
        try driver.timers.schedule(after: .milliseconds(20)) { _ in }
        #expect(driver.wakes == afterFirst)
        try driver.timers.schedule(after: .milliseconds(5)) { _ in }
        try driver.timers.schedule(after: .milliseconds(4)) { _ in }
        #expect(driver.wakes == afterFirst + 1)
    }
}
