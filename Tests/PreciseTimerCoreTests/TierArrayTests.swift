import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// ``TierArray`` (the heap tiers' storage, mapped from the kernel once it reaches a page) behaves
/// as `ContiguousArray` does, copies included.
@Suite struct TierArrayTests {
    /// Random appends, removals, writes, shrinks and copies, each checked against a
    /// `ContiguousArray` doing the same: sizes cross the page (512 elements of 8 bytes) both ways,
    /// so storage moves between `malloc` and a mapping, and copies taken along the way must keep
    /// what they held whatever happens to the array after.
    @Test func agreesWithContiguousArray() {
        var random = SplitMix(seed: 0x7_1E4A_4AA7)
        var array = TierArray<UInt64>()
        var model = ContiguousArray<UInt64>()
        var copies: [(TierArray<UInt64>, ContiguousArray<UInt64>)] = []
        for step in 0..<6_000 {
            // Grow for a while, then drain, so the size sweeps across the page several times.
            let growing = (step / 1_000) % 2 == 0 && model.count < 4_000
            switch random.next() % 10 {
            case 0, 1, 2, 3:
                let count = Int(random.next() % 64)
                for _ in 0..<(growing ? count : count / 4) {
                    let value = random.next()
                    array.append(value)
                    model.append(value)
                }
            case 4, 5:
                let count = Swift.min(model.count, Int(random.next() % (growing ? 16 : 96)))
                array.removeLast(count)
                model.removeLast(count)
            case 6:
                if !model.isEmpty { #expect(array.removeLast() == model.removeLast()) }
            case 7:
                if !model.isEmpty {
                    let index = Int(random.next() % UInt64(model.count))
                    let value = random.next()
                    array[index] = value
                    model[index] = value
                }
            case 8:
                array.shrink(toCapacity: model.count + Int(random.next() % 8))
                #expect(array.capacity >= model.count)
            default:
                copies.append((array, model))
                if copies.count > 4 { copies.removeFirst() }
                // Written through a buffer: must not reach a copy.
                array.withUnsafeMutableBufferPointer { buffer in
                    for index in buffer.indices where index % 7 == 0 { buffer[index] &+= 1 }
                }
                for index in model.indices where index % 7 == 0 { model[index] &+= 1 }
            }
            #expect(array.count == model.count)
            guard step % 50 != 0 || array.elementsEqual(model) else {
                Issue.record("step \(step): the array no longer holds what the model holds")
                return
            }
        }
        #expect(array.elementsEqual(model))
        for (copy, held) in copies {
            #expect(copy.elementsEqual(held))
        }
    }

    /// Appending a slice of another array, reserving, and an empty array's buffer.
    @Test func slicesReservesAndEmpty() {
        var source = TierArray<UInt64>()
        for value in 0..<2_000 { source.append(UInt64(value)) }
        var target: TierArray<UInt64> = []
        #expect(target.capacity == 0)
        target.withUnsafeBufferPointer { #expect($0.isEmpty) }
        target.append(contentsOf: source[1_500...])
        #expect(Array(target) == (1_500..<2_000).map(UInt64.init))
        target.reserveCapacity(10_000)
        #expect(target.capacity >= 10_000)
        #expect(Array(target) == (1_500..<2_000).map(UInt64.init))
        target.shrink(toCapacity: target.count)
        #expect(target.capacity == 500)
        #expect(Array(target) == (1_500..<2_000).map(UInt64.init))
        target.removeLast(500)
        target.shrink(toCapacity: 0)
        #expect(target.capacity == 0 && target.isEmpty)
    }

    /// A buffer of a page or more comes from the kernel: zero-filled and page-aligned.
    @Test func largeBuffersAreMapped() {
        for byteCount in [4_096, 65_536, 1 << 20] {
            #expect(PageMemory.isZeroFilled(byteCount: byteCount))
            let buffer = PageMemory.allocate(byteCount: byteCount, alignment: 64)
            #expect(UInt(bitPattern: buffer) % 4_096 == 0)
            let bytes = UnsafeRawBufferPointer(start: buffer, count: byteCount)
            #expect(bytes.allSatisfy { $0 == 0 })
            PageMemory.deallocate(buffer, byteCount: byteCount)
        }
        #expect(!PageMemory.isZeroFilled(byteCount: 4_095))
    }
}
