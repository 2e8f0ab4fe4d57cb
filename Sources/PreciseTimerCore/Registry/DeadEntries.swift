/// Which entries of a ``TimerHeap``'s far tier are dead (taken out, not yet dropped): bit `i` of
/// word `i / 64` for entry `i`, and their count. Words past the end mean live entries, so a tier
/// with no dead entry holds no storage here.
///
/// A removal marks its entry here instead of reading and writing the entry's own line: the
/// bitmap is a 64th of the tier's size, usually in cache, where an entry at a million timers
/// seldom is.
struct DeadEntries {
    private var words: ContiguousArray<UInt64> = []
    /// How many entries are marked.
    private(set) var count = 0

    var isEmpty: Bool { self.count == 0 }

    /// The words the bitmap holds (tests: none past the tier's end).
    var wordCount: Int { self.words.count }

    @inline(__always)
    func contains(_ index: Int) -> Bool {
        let word = index &>> 6
        return word < self.words.count && self.words[word] & Self.bit(index) != 0
    }

    /// Marks the live entry `index` dead.
    @inline(__always)
    mutating func insert(_ index: Int) {
        if index &>> 6 >= self.words.count { self.grow(toCover: index) }
        self.words[index &>> 6] |= Self.bit(index)
        self.count += 1
    }

    /// Forgets every mark at `start` and above (those entries were dropped), and the words left
    /// empty at the end.
    mutating func removeAll(from start: Int) {
        let first = start &>> 6
        guard first < self.words.count else { return }
        let kept = Self.bit(start) &- 1
        self.count -= (self.words[first] & ~kept).nonzeroBitCount
        self.words[first] &= kept
        for word in (first + 1)..<self.words.count { self.count -= self.words[word].nonzeroBitCount }
        self.words.removeLast(self.words.count - first - 1)
        while self.words.last == 0 { self.words.removeLast() }
    }

    /// Forgets every mark.
    mutating func removeAll() {
        self = DeadEntries()
    }

    /// Swaps the marks of entries `a` and `b` (as the entries themselves are swapped).
    mutating func swapAt(_ a: Int, _ b: Int) {
        guard self.contains(a) != self.contains(b) else { return }
        self.grow(toCover: Swift.max(a, b))
        self.words[a &>> 6] ^= Self.bit(a)
        self.words[b &>> 6] ^= Self.bit(b)
    }

    /// Calls `body` with each marked index below `end`, in increasing order, a word at a time.
    func forEach(below end: Int, _ body: (Int) -> Void) {
        for word in 0..<Swift.min(self.words.count, (end + 63) / 64) {
            var marks = self.words[word]
            if (word + 1) * 64 > end { marks &= Self.bit(end) &- 1 }
            while marks != 0 {
                body(word * 64 + marks.trailingZeroBitCount)
                marks &= marks &- 1
            }
        }
    }

    @inline(never)
    private mutating func grow(toCover index: Int) {
        let needed = index &>> 6 + 1
        if self.words.count < needed {
            self.words.append(contentsOf: repeatElement(0, count: needed - self.words.count))
        }
    }

    @inline(__always)
    private static func bit(_ index: Int) -> UInt64 { 1 &<< UInt64(index & 63) }
}
