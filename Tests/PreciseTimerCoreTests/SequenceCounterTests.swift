import PreciseTimerCore
import Testing

/// The core's one sequence counter: numbers in order from 1, and the address its write hint
/// (``SequenceCounter/prefetchForWrite()``) names is the counter itself, not a padding word beside
/// it (a wrong offset would cost two caller threads the hint's gain, silently).
@Suite("The sequence counter")
struct SequenceCounterTests {
    @Test("draws 1, 2, 3… and its hinted address holds the count")
    func hintedAddressIsTheCounter() {
        let counter = SequenceCounter()
        #expect(counter.valueAddress.load(as: UInt64.self) == 0)
        for expected in UInt64(1)...5 {
            #expect(counter.next() == expected)
            #expect(counter.valueAddress.load(as: UInt64.self) == expected)
        }
        counter.prefetchForWrite()  // A hint: changes nothing.
        #expect(counter.next() == 6)
    }
}
