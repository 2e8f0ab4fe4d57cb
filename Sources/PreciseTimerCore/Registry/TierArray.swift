/// A growable array of heap entries (a tier of ``TimerHeap``) in ``PageMemory``: what
/// `ContiguousArray` offers the heap, with storage that, once large, never goes through `malloc`.
/// Copy-on-write, as `ContiguousArray` is.
///
/// Not generic on purpose: a debug build runs generic code unspecialized, and there each
/// `Optional<Element>` or `Range<Int>` it touches is fetched from the runtime's cache of
/// prespecialized metadata under a lock; with the heap calling it on every operation, the suite
/// under ThreadSanitizer crawled on that lock (`perf`: `TierArray.first`, `count`).
package struct TierArray: RandomAccessCollection, MutableCollection, ExpressibleByArrayLiteral {
    package typealias Element = TimerHeap.Entry

    private final class Storage {
        var base: UnsafeMutablePointer<Element>
        var capacity: Int
        var count = 0

        init(capacity: Int) {
            self.capacity = capacity
            self.base = PageMemory.allocate(byteCount: Self.bytes(capacity), alignment: MemoryLayout<Element>.alignment)
                .bindMemory(to: Element.self, capacity: capacity)
        }

        deinit {
            PageMemory.deallocate(UnsafeMutableRawPointer(self.base), byteCount: Self.bytes(self.capacity))
        }

        /// Gives the storage room for exactly `capacity` elements (at least `count`), in place.
        func resize(to capacity: Int) {
            self.base = PageMemory.reallocate(
                UnsafeMutableRawPointer(self.base), from: Self.bytes(self.capacity), to: Self.bytes(capacity),
                keeping: Self.bytes(self.count), alignment: MemoryLayout<Element>.alignment
            ).bindMemory(to: Element.self, capacity: capacity)
            self.capacity = capacity
        }

        static func bytes(_ capacity: Int) -> Int { capacity * MemoryLayout<Element>.stride }
    }

    /// `nil` until the first element: an empty array allocates nothing.
    private var storage: Storage?

    package init() {}

    package init(arrayLiteral elements: Element...) {
        for element in elements { self.append(element) }
    }

    // The collection's basics are written out rather than left to the protocols' defaults, which
    // a debug build runs unspecialized (see above).

    package var startIndex: Int { 0 }
    @inline(__always)
    package var endIndex: Int { self.storage?.count ?? 0 }
    @inline(__always)
    package var count: Int { self.storage?.count ?? 0 }
    @inline(__always)
    package var isEmpty: Bool { self.count == 0 }
    @inline(__always)
    package var first: Element? { self.isEmpty ? nil : self.storage.unsafelyUnwrapped.base[0] }
    @inline(__always)
    package func index(after index: Int) -> Int { index + 1 }
    @inline(__always)
    package func index(before index: Int) -> Int { index - 1 }
    @inline(__always)
    package func index(_ index: Int, offsetBy distance: Int) -> Int { index + distance }
    @inline(__always)
    package func distance(from start: Int, to end: Int) -> Int { end - start }
    /// The elements the storage holds without growing.
    package var capacity: Int { self.storage?.capacity ?? 0 }

    /// Iterates over the elements as they were when the iteration began (it holds a copy).
    package struct Iterator: IteratorProtocol {
        fileprivate let array: TierArray
        fileprivate var index = 0

        package mutating func next() -> Element? {
            guard self.index < self.array.count else { return nil }
            defer { self.index += 1 }
            return self.array.storage.unsafelyUnwrapped.base[self.index]
        }
    }

    package func makeIterator() -> Iterator { Iterator(array: self) }

    package subscript(index: Int) -> Element {
        @inline(__always)
        get {
            precondition(index >= 0 && index < self.count, "TierArray: index out of range")
            return self.storage.unsafelyUnwrapped.base[index]
        }
        @inline(__always)
        set {
            precondition(index >= 0 && index < self.count, "TierArray: index out of range")
            self.makeUnique(minimumCapacity: 0)
            self.storage.unsafelyUnwrapped.base[index] = newValue
        }
    }

    /// Makes the storage this array's alone, with room for `minimumCapacity` elements.
    @inline(__always)
    private mutating func makeUnique(minimumCapacity: Int) {
        if isKnownUniquelyReferenced(&self.storage), self.storage.unsafelyUnwrapped.capacity >= minimumCapacity {
            return
        }
        self.grow(minimumCapacity: minimumCapacity)
    }

    /// Storage of its own with room for `minimumCapacity` elements, doubling (at least 16), as
    /// `ContiguousArray` grows: storage this array alone holds is resized in place.
    @inline(never)
    private mutating func grow(minimumCapacity: Int) {
        var capacity = Swift.max(16, self.capacity)
        while capacity < minimumCapacity { capacity *= 2 }
        if isKnownUniquelyReferenced(&self.storage) {
            let storage = self.storage.unsafelyUnwrapped
            if storage.capacity != capacity { storage.resize(to: capacity) }
            return
        }
        let fresh = Storage(capacity: capacity)
        if let old = self.storage {
            fresh.base.update(from: old.base, count: old.count)
            fresh.count = old.count
        }
        self.storage = fresh
    }

    /// Gives the storage back down to room for `capacity` elements (at least ``count``).
    package mutating func shrink(toCapacity capacity: Int) {
        precondition(capacity >= self.count, "TierArray: shrinking below the elements held")
        guard capacity < self.capacity else { return }
        guard capacity > 0 else {
            self.storage = nil
            return
        }
        guard isKnownUniquelyReferenced(&self.storage) else {
            var fitted = TierArray()
            fitted.reserveCapacity(capacity)
            fitted.append(elementsOf: self, from: 0)
            self = fitted
            return
        }
        self.storage.unsafelyUnwrapped.resize(to: capacity)
    }

    /// Makes room for `minimumCapacity` elements.
    package mutating func reserveCapacity(_ minimumCapacity: Int) {
        self.makeUnique(minimumCapacity: minimumCapacity)
    }

    @inline(__always)
    package mutating func append(_ element: Element) {
        if !isKnownUniquelyReferenced(&self.storage)
            || self.storage.unsafelyUnwrapped.count == self.storage.unsafelyUnwrapped.capacity
        {
            self.grow(minimumCapacity: self.count + 1)
        }
        let storage = self.storage.unsafelyUnwrapped
        (storage.base + storage.count).initialize(to: element)
        storage.count += 1
    }

    /// Appends `other`'s elements from index `start` on (`append(contentsOf: other[start...])`,
    /// in one copy).
    package mutating func append(elementsOf other: TierArray, from start: Int) {
        precondition(start >= 0 && start <= other.count, "TierArray: index out of range")
        let added = other.count - start
        guard added > 0 else { return }
        let count = self.count
        self.makeUnique(minimumCapacity: count + added)
        let storage = self.storage.unsafelyUnwrapped
        other.withUnsafeBufferPointer { source in
            (storage.base + count).initialize(from: source.baseAddress.unsafelyUnwrapped + start, count: added)
        }
        storage.count = count + added
    }

    @discardableResult
    @inline(__always)
    package mutating func removeLast() -> Element {
        precondition(!self.isEmpty, "TierArray: removeLast of an empty array")
        self.makeUnique(minimumCapacity: 0)
        let storage = self.storage.unsafelyUnwrapped
        storage.count -= 1
        return storage.base[storage.count]
    }

    package mutating func removeLast(_ k: Int) {
        precondition(k >= 0 && k <= self.count, "TierArray: removeLast of more than the array holds")
        guard k > 0 else { return }
        self.makeUnique(minimumCapacity: 0)
        self.storage.unsafelyUnwrapped.count -= k
    }

    @inline(__always)
    package func withUnsafeBufferPointer<Result>(
        _ body: (UnsafeBufferPointer<Element>) throws -> Result
    ) rethrows
        -> Result
    {
        guard let storage = self.storage else { return try body(UnsafeBufferPointer(start: nil, count: 0)) }
        return try withExtendedLifetime(storage) {
            try body(UnsafeBufferPointer(start: storage.base, count: storage.count))
        }
    }

    @inline(__always)
    package mutating func withUnsafeMutableBufferPointer<Result>(
        _ body: (inout UnsafeMutableBufferPointer<Element>) throws -> Result
    ) rethrows -> Result {
        guard self.storage != nil else {
            var empty = UnsafeMutableBufferPointer<Element>(start: nil, count: 0)
            return try body(&empty)
        }
        self.makeUnique(minimumCapacity: 0)
        let storage = self.storage.unsafelyUnwrapped
        var buffer = UnsafeMutableBufferPointer(start: storage.base, count: storage.count)
        return try withExtendedLifetime(storage) { try body(&buffer) }
    }
}
