/// Tolerance as a grid: a timer that may fire up to `t` late fires at the first multiple of the
/// largest power of two not above `t` at or after its deadline. Timers whose deadlines fall in
/// one cell share one instant, and so one wake-up; the rounding never goes before the deadline
/// and stays below the tolerance; a power of two makes it a mask, one addition and one `and`.
enum Coalescing {
    /// The grid's step minus one for `tolerance` nanoseconds (0: no coalescing).
    @inline(__always)
    static func mask(tolerance: Int64) -> Int64 {
        guard tolerance > 0 else { return 0 }
        return (Int64(1) << (63 - tolerance.leadingZeroBitCount)) - 1
    }

    /// `deadline` rounded up to the grid; the deadline itself where rounding would overflow.
    @inline(__always)
    static func fireAt(_ deadline: Int64, mask: Int64) -> Int64 {
        guard mask != 0 else { return deadline }
        let (sum, overflow) = deadline.addingReportingOverflow(mask)
        return overflow ? deadline : sum & ~mask
    }
}
