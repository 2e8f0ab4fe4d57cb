import PreciseTimerCore
import PreciseTimerTesting
import Testing

/// ``TierArray`` (the heap tiers' storage, mapped from the kernel once it reaches a page) behaves
/// as `ContiguousArray` does, copies included.
@Suite struct TierArrayTests {
    /// The node every entry here names (entries do not retain it; the suite keeps it alive).
    private static let node = TimerNode.make(id: "tier", deadline: 0, interval: 0, options: TimerOptions()) { _ in }

    /// An entry told apart from others by its value (its deadline and its sequence).
    private static func entry(_ value: UInt64) -> TimerHeap.Entry {
        TimerHeap.Entry(deadline: Int64(truncatingIfNeeded: value), sequence: ~value, node: .passUnretained(Self.node))
    }

    /// The value ``entry(_:)`` made `entry` from, or `nil` for an entry it did not make.
    private static func value(_ entry: TimerHeap.Entry) -> UInt64? {
        let value = UInt64(bitPattern: entry.deadline)
        return entry.sequence == ~value && entry.node.toOpaque() == Unmanaged.passUnretained(Self.node).toOpaque()
            ? value : nil
    }

    private static func values(_ array: TierArray) -> [UInt64?] { array.map(Self.value) }

    /// Random appends, removals, writes, shrinks and copies, each checked against a
    /// `ContiguousArray` doing the same: sizes cross the page (171 entries of 24 bytes) both ways,
    /// so storage moves between `malloc` and a mapping, and copies taken along the way must keep
    /// what they held whatever happens to the array after.
    @Test func agreesWithContiguousArray() {
        var random = SplitMix(seed: 0x7_1E4A_4AA7)
        var array = TierArray()
        var model = ContiguousArray<UInt64>()
        var copies: [(TierArray, ContiguousArray<UInt64>)] = []
        for step in 0..<6_000 {
            // Grow for a while, then drain, so the size sweeps across the page several times.
            let growing = (step / 1_000) % 2 == 0 && model.count < 4_000
            switch random.next() % 10 {
            case 0, 1, 2, 3:
                let count = Int(random.next() % 64)
                for _ in 0..<(growing ? count : count / 4) {
                    let value = random.next()
                    array.append(Self.entry(value))
                    model.append(value)
                }
            case 4, 5:
                let count = Swift.min(model.count, Int(random.next() % (growing ? 16 : 96)))
                array.removeLast(count)
                model.removeLast(count)
            case 6:
                if !model.isEmpty { #expect(Self.value(array.removeLast()) == model.removeLast()) }
            case 7:
                if !model.isEmpty {
                    let index = Int(random.next() % UInt64(model.count))
                    let value = random.next()
                    array[index] = Self.entry(value)
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
                    for index in buffer.indices where index % 7 == 0 {
                        buffer[index] = Self.entry(Self.value(buffer[index])! &+ 1)
                    }
                }
                for index in model.indices where index % 7 == 0 { model[index] &+= 1 }
            }
            #expect(array.count == model.count)
            guard step % 50 != 0 || Self.values(array) == model.map(Optional.some) else {
                Issue.record("step \(step): the array no longer holds what the model holds")
                return
            }
        }
        #expect(Self.values(array) == model.map(Optional.some))
        for (copy, held) in copies {
            #expect(Self.values(copy) == held.map(Optional.some))
        }
    }

    /// Appending another array's tail, reserving, shrinking, a literal, and an empty array's buffer.
    @Test func tailsReservesAndEmpty() {
        let literal: TierArray = [Self.entry(7), Self.entry(8)]
        #expect(Self.values(literal) == [7, 8])
        var source = TierArray()
        for value in 0..<2_000 { source.append(Self.entry(UInt64(value))) }
        var target: TierArray = []
        #expect(target.capacity == 0)
        target.withUnsafeBufferPointer { #expect($0.isEmpty) }
        target.append(elementsOf: source, from: 1_500)
        #expect(Self.values(target) == (1_500..<2_000).map { UInt64($0) })
        target.reserveCapacity(10_000)
        #expect(target.capacity >= 10_000)
        #expect(Self.values(target) == (1_500..<2_000).map { UInt64($0) })
        target.shrink(toCapacity: target.count)
        #expect(target.capacity == 500)
        #expect(Self.values(target) == (1_500..<2_000).map { UInt64($0) })
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

    /// A buffer resized keeps what it held: mapped to mapped (remapped, or copied under a
    /// sanitizer), growing and shrinking, then down below a page (back to `malloc`).
    @Test func reallocationKeepsContents() {
        let page = 4_096
        func fill(_ buffer: UnsafeMutableRawPointer, from start: Int, to end: Int) {
            for offset in stride(from: start, to: end, by: 8) {
                buffer.storeBytes(of: UInt64(offset) &* 0x9E37_79B9_7F4A_7C15, toByteOffset: offset, as: UInt64.self)
            }
        }
        func holds(_ buffer: UnsafeMutableRawPointer, upTo end: Int) -> Bool {
            stride(from: 0, to: end, by: 8).allSatisfy {
                buffer.load(fromByteOffset: $0, as: UInt64.self) == UInt64($0) &* 0x9E37_79B9_7F4A_7C15
            }
        }
        var buffer = PageMemory.allocate(byteCount: 3 * page, alignment: 64)
        fill(buffer, from: 0, to: 3 * page)
        buffer = PageMemory.reallocate(buffer, from: 3 * page, to: 64 * page, keeping: 3 * page, alignment: 64)
        #expect(holds(buffer, upTo: 3 * page))
        fill(buffer, from: 3 * page, to: 64 * page)  // The pages a growth adds are writable.
        buffer = PageMemory.reallocate(buffer, from: 64 * page, to: 128 * page + 24, keeping: 64 * page, alignment: 64)
        #expect(holds(buffer, upTo: 64 * page))
        buffer = PageMemory.reallocate(buffer, from: 128 * page + 24, to: 2 * page, keeping: 2 * page, alignment: 64)
        #expect(holds(buffer, upTo: 2 * page))
        buffer = PageMemory.reallocate(buffer, from: 2 * page, to: 1_000, keeping: 1_000, alignment: 64)
        #expect(holds(buffer, upTo: 1_000))
        PageMemory.deallocate(buffer, byteCount: 1_000)
    }
}
