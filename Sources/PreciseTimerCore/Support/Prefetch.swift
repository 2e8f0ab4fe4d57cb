import CPreciseTimerCore

/// Cache hints for the registry's hot paths: the CPU starts loading a line the caller reads soon,
/// so the miss overlaps the caller's work instead of stalling it (a table slot before the lock, a
/// storm's next node while the current one runs).
///
/// Hints only: an address may be stale or torn and is never dereferenced. Compiled in, as one
/// instruction each: a hint through the driver's witness cost a call per hint, about 40
/// instructions per schedule-and-cancel and four calls per fire.
enum Prefetch {
    /// Hints the cache line at `address` (a bit pattern, possibly stale).
    @inline(__always)
    static func line(at address: UInt) {
        CPreciseTimerCore_prefetch(UnsafeRawPointer(bitPattern: address))
    }

    /// Hints the cache lines of the node at `address`: 72 bytes (``TimerNode``'s size, checked
    /// by a test) from a 16-byte boundary, always two lines. A ``NamedTimerNode``'s stored ID,
    /// past them, is not hinted: firing does not read it.
    @inline(__always)
    static func node(at address: UInt) {
        Self.line(at: address)
        Self.line(at: address &+ 71)
    }

    /// Hints what firing or releasing `node` touches besides the node: its handler's closure
    /// context and, when given, its slot in `table`.
    @inline(__always)
    static func handler(of node: TimerNode, slotIn table: TimerTable?) {
        if let table { Self.line(at: table.slotAddress(hash: node.hash)) }
        Self.line(at: node.handlerContextAddress)
    }
}
