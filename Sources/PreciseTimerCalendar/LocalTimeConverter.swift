/// `localtime_r` and `mktime` over one zone, as glibc computes them, with `mktime`'s memory.
///
/// systemd's calendar code leans on `mktime` to normalize out-of-range fields, to skip local
/// times that do not exist and to choose between the two readings of an ambiguous one. Which
/// reading glibc's `mktime` returns depends on the offset its previous call found (it starts
/// its search from it), so this converter keeps that offset between calls exactly as glibc
/// keeps it in a static, and a computation starts from 0 as a fresh process does (systemd
/// computes a zone's elapse in a forked child). UTC needs none of it: `gmtime_r` and `timegm`.
struct LocalTimeConverter {
    let zone: TimeZoneRules
    /// glibc's `localtime_offset`: the last `mktime`'s answer minus its local seconds.
    private var offsetGuess = 0
    /// The last look-up and the instants over which it holds.
    private var cached: (type: LocalTimeType, validFrom: Int, validUntil: Int)

    /// The zone is a `right/` one (or UTC in a process whose local zone is): the checks for an
    /// inserted leap second are made only then.
    private let hasLeapSeconds: Bool

    init(zone: TimeZoneRules) {
        self.zone = zone
        self.cached = (LocalTimeType(utcOffset: 0, isDST: false), 0, 0)
        self.hasLeapSeconds = !zone.leapSeconds.isEmpty
    }

    /// While tracked: the shifts `δ` such that every look-up since tracking began, made at
    /// `instant + δ` instead, would have found the same local time type (and no inserted leap
    /// second where there was none): `[low, high)`.
    private var uniformity: (low: Int, high: Int)?

    @inline(__always)
    private mutating func type(at instant: Int) -> LocalTimeType {
        if !(instant >= self.cached.validFrom && instant < self.cached.validUntil) {
            self.cached = self.zone.localTime(at: instant)
        }
        if self.uniformity != nil { self.narrowUniformity(around: instant) }
        return self.cached.type
    }

    private mutating func narrowUniformity(around instant: Int) {
        guard var window = self.uniformity else { return }
        var from = self.cached.validFrom
        var until = self.cached.validUntil
        // In a `right/` zone the first instant of a piece may be an inserted leap second, which
        // reads differently from the rest of the piece: keep it apart.
        if self.hasLeapSeconds && from != .min && self.zone.isInsertedLeapSecond(from) {
            if instant == from { until = from + 1 } else { from += 1 }
        }
        if from != .min { window.low = max(window.low, from - instant) }
        if until != .max { window.high = min(window.high, until - instant) }
        self.uniformity = window
    }

    /// Starts recording over which shifts of the instants looked up the look-ups would agree:
    /// a conversion made while tracking gives the same answer, shifted, for every input shifted
    /// by a `δ` in ``endUniformityTracking()``'s range (every step of `mktime` and
    /// `localtime_r` depends on the input only through the types it looks up).
    mutating func beginUniformityTracking() {
        self.uniformity = (.min, .max)
    }

    /// Stops recording; the shifts `[low, high)` (0 among them) over which the look-ups made
    /// since ``beginUniformityTracking()`` would have agreed.
    mutating func endUniformityTracking() -> (low: Int, high: Int) {
        defer { self.uniformity = nil }
        return self.uniformity ?? (0, 1)
    }

    /// `localtime_r`: the local fields of `instant` (seconds since the epoch). In a `right/`
    /// zone an inserted leap second reads as second 60 of the minute before it, as in glibc.
    mutating func brokenDown(_ instant: Int) -> BrokenDownTime {
        let type = self.type(at: instant)
        var time = BrokenDownTime(localSeconds: instant + type.utcOffset, isDST: type.isDST)
        if self.hasLeapSeconds && self.zone.isInsertedLeapSecond(instant) { time.second += 1 }
        return time
    }

    /// The local clock's reading of `instant` in seconds, second 60 of an inserted leap second
    /// counted as the next minute's 0, as glibc's `tm_diff` counts it.
    @inline(__always)
    private mutating func reading(_ instant: Int, _ type: LocalTimeType) -> Int {
        instant + type.utcOffset + (self.hasLeapSeconds && self.zone.isInsertedLeapSecond(instant) ? 1 : 0)
    }

    /// `mktime`: the instant `time`'s fields name in this zone, and `time` rewritten to that
    /// instant's normalized fields; nil where glibc fails (`EOVERFLOW`).
    ///
    /// A port of glibc's `__mktime_internal` (2.36): probe from the last offset, follow the
    /// error; a time in a gap oscillates and takes the probe glibc takes; a requested
    /// `isDST` that differs from the match's looks for the nearest instant with it. Checked
    /// against glibc's own `mktime` by the oracle tests (every DST case there goes through it).
    mutating func makeTime(_ time: inout BrokenDownTime) -> Int? {
        if self.zone.isUTC {
            let instant = time.localSeconds
            time = time.normalized(localSeconds: instant, isDST: false)
            return instant
        }
        // glibc takes an out-of-range second as 0 or 59 and adds the difference at the end.
        let requestedSecond = time.second
        var probe = time
        probe.second = min(max(requestedSecond, 0), 59)
        let local = probe.localSeconds
        let requestedDST = time.isDST

        let start = local + self.offsetGuess
        var instant = start
        var previous = start  // glibc's t1
        var latest = start  // glibc's t2
        var latestWasDST = false  // glibc's dst2: the previous probe's flag
        var remainingProbes = 6
        var found: BrokenDownTime
        search: while true {
            let type = self.type(at: instant)
            let difference = local - self.reading(instant, type)
            if difference == 0 {
                // glibc keeps the fields it read, second 60 of a leap second included.
                found =
                    self.hasLeapSeconds
                    ? self.brokenDown(instant) : probe.normalized(localSeconds: local, isDST: type.isDST)
                if requestedDST >= 0 && (requestedDST != 0) != type.isDST {
                    guard let adjusted = self.nearest(local: local, from: instant, isDST: requestedDST != 0)
                    else { return nil }
                    instant = adjusted
                    found = self.brokenDown(instant)
                }
                break search
            }
            // Oscillating between two probes: the local time falls in a gap. glibc returns the
            // probe whose daylight flag differs from the one asked for or, when none was asked
            // for, one whose flag is not below the other's: the daylight one when they differ
            // (measured against glibc: 02:30 on a spring-forward day is 03:30 DST), this one
            // when they agree (a change of standard offset).
            if instant == previous && instant != latest
                && (requestedDST < 0 ? (!latestWasDST || type.isDST) : (requestedDST != 0) != type.isDST)
            {
                found =
                    self.hasLeapSeconds
                    ? self.brokenDown(instant)
                    : BrokenDownTime(localSeconds: instant + type.utcOffset, isDST: type.isDST)
                break search
            }
            remainingProbes -= 1
            if remainingProbes == 0 { return nil }
            previous = latest
            latest = instant
            instant += difference
            latestWasDST = type.isDST
        }
        self.offsetGuess = instant - local
        if requestedSecond != found.second {
            // glibc's adjustment, with its repair of a match on second 60 asked for as 0.
            instant += (probe.second == 0 && found.second == 60 ? 1 : 0) - probe.second + requestedSecond
            found = self.brokenDown(instant)
        }
        time = found
        return instant
    }

    /// glibc's search when the match's daylight flag is not the one asked for: probe a week at
    /// a time in both directions (nearest first) for an instant with the flag, and read the
    /// local time with its offset; failing that, assume one hour.
    ///
    /// glibc 2.36 searches half of its `duration_max` (457 243 200 s) plus a stride each way:
    /// about 7.3 years. `12:00 EDT` in America/Indiana/Winamac (no DST 1971–2005) finds no
    /// daylight time from 1998-10-31 and none here either.
    private mutating func nearest(local: Int, from instant: Int, isDST: Bool) -> Int? {
        let stride = 601_200
        let bound = 457_243_200 / 2 + stride
        var delta = stride
        while delta < bound {
            for direction in [-1, 1] {
                let other = instant + delta * direction
                let type = self.type(at: other)
                if type.isDST == isDST {
                    return other + (local - self.reading(other, type))
                }
            }
            delta += stride
        }
        let current = self.type(at: instant)
        let difference = (isDST ? 0 : 1) - (current.isDST ? 0 : 1)
        return instant + 3600 * difference
    }
}
