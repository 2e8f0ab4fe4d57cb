import CPreciseTimerCore
import Glibc

/// Memory for the registry's large buffers (ID tables, heap tiers): an anonymous mapping from the
/// kernel at ``mappedBytes`` and above, `malloc` below.
///
/// Why not `malloc` for all of them: glibc consolidates its fast bins (`malloc_consolidate`)
/// whenever a free leaves a free chunk of 64 KiB or more in an arena that holds fast chunks,
/// walking every one. A storm fills the fast bins of the arena its timers came from with every node and
/// closure it frees (100 000 of each for a storm of 100 000). The loop then shrinks the tables
/// and heap tiers the storm drained, and each free of one of those buffers (grown in that arena
/// by the callers) made it consolidate: 4–17 ms on the loop thread under a shard's lock and the
/// arena's, while timers due just after the storm waited and callers' `malloc` stood still
/// (`perf`; the storm probe's `tail`). A mapping is given back with `munmap`, which no arena
/// sees.
package enum PageMemory {
    /// Buffers of at least this many bytes (a page) are mapped. Not only a free of 64 KiB (glibc's
    /// `FASTBIN_CONSOLIDATION_THRESHOLD`) consolidates: the threshold is checked against the chunk
    /// once merged with its free neighbours, so a free of a few KiB next to free memory does too
    /// (`perf` showed it for a heap tier of 38 KiB). Below a page, `malloc`'s per-thread cache
    /// takes most frees (up to 1 032 bytes) without merging anything.
    package static let mappedBytes = 4096

    /// `byteCount` bytes aligned to `alignment` (at most a page). A mapped buffer is zero-filled
    /// (``isZeroFilled(byteCount:)``); a smaller one is uninitialized.
    package static func allocate(byteCount: Int, alignment: Int) -> UnsafeMutableRawPointer {
        guard byteCount >= Self.mappedBytes else {
            return UnsafeMutableRawPointer.allocate(byteCount: byteCount, alignment: alignment)
        }
        let mapped = mmap(nil, byteCount, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
        guard let mapped, mapped != MAP_FAILED else {
            // As Swift's own allocations do when `malloc` fails.
            fatalError("PreciseTimer: cannot map \(byteCount) bytes for the registry (errno \(errno))")
        }
        return mapped
    }

    /// Gives back what ``allocate(byteCount:alignment:)`` returned for the same `byteCount`.
    package static func deallocate(_ pointer: UnsafeMutableRawPointer, byteCount: Int) {
        guard byteCount >= Self.mappedBytes else {
            pointer.deallocate()
            return
        }
        let unmapped = munmap(pointer, byteCount)
        precondition(unmapped == 0, "PreciseTimer: munmap of a registry buffer failed (errno \(errno))")
    }

    /// Moves what ``allocate(byteCount:alignment:)`` returned for `oldByteCount` into a buffer of
    /// `newByteCount`, keeping the first `keptBytes` (and perhaps more: the rest is unspecified),
    /// and gives the old one back.
    ///
    /// A mapping resized to another is remapped (`mremap`): the kernel moves its pages rather than
    /// copying them into fresh ones, each of which would fault in again. A heap tier grows under
    /// its shard's lock, and churn after a fill doubles every shard's far tier at once (its dead
    /// entries wait there for a compaction). Builds under a sanitizer copy instead (see
    /// `CPreciseTimerCore_remap`).
    package static func reallocate(
        _ pointer: UnsafeMutableRawPointer, from oldByteCount: Int, to newByteCount: Int, keeping keptBytes: Int,
        alignment: Int
    ) -> UnsafeMutableRawPointer {
        if oldByteCount >= Self.mappedBytes, newByteCount >= Self.mappedBytes {
            if let moved = CPreciseTimerCore_remap(pointer, oldByteCount, newByteCount) { return moved }
            let failure = errno
            guard failure == ENOSYS else {
                // As Swift's own allocations do when `realloc` fails.
                fatalError("PreciseTimer: cannot remap \(oldByteCount) bytes to \(newByteCount) (errno \(failure))")
            }
        }
        let fresh = Self.allocate(byteCount: newByteCount, alignment: alignment)
        fresh.copyMemory(from: pointer, byteCount: keptBytes)
        Self.deallocate(pointer, byteCount: oldByteCount)
        return fresh
    }

    /// Whether a buffer of `byteCount` bytes comes zero-filled.
    package static func isZeroFilled(byteCount: Int) -> Bool { byteCount >= Self.mappedBytes }
}
