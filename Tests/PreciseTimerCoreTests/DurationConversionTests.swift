import PreciseTimerCore
import Testing

/// ``Swift/Duration/timerNanoseconds`` divides the attoseconds by 10⁹ in two 64-bit halves; these
/// tests hold it to the plain definition: whole nanoseconds rounded up, `nil` when negative or
/// beyond ``TimerService/maximumDuration``.
@Suite("Duration to timer nanoseconds")
struct DurationConversionTests {
    /// The definition, with `components` (a 128-bit division by 10¹⁸ in a library call), which
    /// traps beyond `Int64.max` seconds: the earlier conversion did, for any such duration a
    /// caller passed. The reference answers those (all past the limit) without it.
    static func reference(_ duration: Duration) -> Int64? {
        guard duration.attoseconds.magnitude < UInt128(1) << 100 else { return nil }
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0, seconds <= TimerLimits.maximumNanoseconds / 1_000_000_000 else {
            return nil
        }
        let nanoseconds = seconds * 1_000_000_000 + (attoseconds + 999_999_999) / 1_000_000_000
        return nanoseconds <= TimerLimits.maximumNanoseconds ? nanoseconds : nil
    }

    @Test("edges: zero, an attosecond, whole and partial nanoseconds, the limit and just past it, negatives")
    func edges() {
        let limit = TimerLimits.maximumNanoseconds
        let cases: [(Duration, Int64?)] = [
            (.zero, 0),
            (Duration(attoseconds: 1), 1),
            (Duration(attoseconds: 999_999_999), 1),
            (Duration(attoseconds: 1_000_000_000), 1),
            (Duration(attoseconds: 1_000_000_001), 2),
            (.nanoseconds(1), 1),
            (.milliseconds(1), 1_000_000),
            (.seconds(3_600), 3_600_000_000_000),
            (.seconds(18), 18_000_000_000),  // above 2⁶⁴ attoseconds: the high half is used
            (.nanoseconds(limit), limit),
            (.nanoseconds(limit) + Duration(attoseconds: 1), nil),
            (.nanoseconds(limit) + .nanoseconds(1), nil),
            (Duration(attoseconds: Int128(Int64.max) * 1_000_000_000 * 4), nil),
            (Duration(attoseconds: .max), nil),
            (Duration(attoseconds: -1), nil),
            (.nanoseconds(-1), nil),
            (.seconds(-3_600), nil),
            (Duration(attoseconds: .min), nil),
        ]
        for (duration, expected) in cases {
            #expect(duration.timerNanoseconds == expected, "\(duration)")
            #expect(Self.reference(duration) == expected, "reference, \(duration)")
        }
    }

    @Test("durations past Int64.max seconds, either sign, are refused without a trap")
    func hugeDurations() {
        for attoseconds in [
            Int128.max, .min, .max / 2, -(Int128(1) << 100), Int128(Int64.max) * 1_000_000_000_000_000_000 + 1,
        ] {
            #expect(Duration(attoseconds: attoseconds).timerNanoseconds == nil, "\(attoseconds) as")
        }
    }

    @Test("random durations over the whole range agree with the definition")
    func randomDurations() {
        var generator = SystemRandomNumberGenerator()
        let limitAttoseconds = Int128(TimerLimits.maximumNanoseconds) * 1_000_000_000
        for _ in 0..<20_000 {
            // Magnitudes spread over every power of two up to past the limit, either sign.
            let bits = Int.random(in: 0...93, using: &generator)
            let magnitude = Int128.random(in: 0...(Int128(1) << bits), using: &generator)
            let attoseconds = Bool.random(using: &generator) ? magnitude : -magnitude
            let duration = Duration(attoseconds: attoseconds)
            #expect(duration.timerNanoseconds == Self.reference(duration), "\(attoseconds) as")
        }
        #expect(Duration(attoseconds: limitAttoseconds).timerNanoseconds == TimerLimits.maximumNanoseconds)
    }
}
