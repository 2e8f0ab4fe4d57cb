import CLibevent

/// Asks the CPU to start loading the memory at `address` (given as its bit pattern), which the
/// caller will read soon: the loop prefetches the next due timer's node while it runs the current
/// one, so a storm of due timers does not wait for one cache miss per timer in series. A hint
/// only: a stale or zero address is harmless (`__builtin_prefetch` never faults).
@inline(__always)
func prefetch(address: UInt) {
    CLibevent_prefetch(UnsafeRawPointer(bitPattern: address))
}
