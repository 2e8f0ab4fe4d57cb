import Glibc
import PreciseTimer
import Dispatch
let timers = try PreciseTimer()
final class Box: @unchecked Sendable { var l: [Int64] = []; let s = DispatchSemaphore(value: 0) }
let box = Box()
try timers.scheduleRepeating(id: "t", every: .milliseconds(1)) { tick in
    box.l.append(tick.lateness.components.attoseconds / 1000)
    if tick.count == 3000 { timers.cancel(tick.id); box.s.signal() }
}
box.s.wait()
let s = box.l.sorted()
print("p50 \(s[s.count/2]) ns p99 \(s[s.count*99/100]) max \(s.last!)")
try timers.schedule(after: .zero) { t in print("oneshot", t) }
try timers.schedule(id: "a", after: .milliseconds(5)) { t in print("a", t) }
try timers.schedule(id: "b", after: .milliseconds(5)) { t in print("b", t) }
do { try timers.schedule(id: "b", after: .milliseconds(5)) { _ in } } catch { print(error) }
usleep(20000)
timers.shutdown()
print("ids after shutdown", timers.scheduledIDs)
