import PreciseTimerCore

extension Duration {
    /// Reads a time span as systemd does (`systemd.time(7)`): `"1h 30min"`, `"2.5s"`, `"1d"`,
    /// `"5m 30s"`, `"1y"`, `"300ms20s 5day"`.
    ///
    /// The answer is the one `systemd-analyze timespan` (systemd 252) prints, in whole
    /// microseconds: the package's tests compare it over every unit spelling, combinations,
    /// decimals, whitespace and refused text. The units: `usec`, `us`, `µs` / `μs`; `msec`,
    /// `ms`; `seconds`, `second`, `sec`, `s`; `minutes`, `minute`, `min`, `m`; `hours`, `hour`,
    /// `hr`, `h`; `days`, `day`, `d`; `weeks`, `week`, `w`; `months`, `month`, `M` (30.44 days);
    /// `years`, `year`, `y` (365.25 days). A number without a unit is seconds; spans add up
    /// (`1h 30min`, `55s500ms`); spaces may separate a number from its unit. Decimals are exact
    /// to the microsecond and digits below it are dropped, as systemd drops them: `"0.5us"` is
    /// zero, `"1.0000005s"` is one second and 0 µs. `ns` is not a unit here (nor in systemd's
    /// `…Sec=` settings).
    ///
    /// `infinity`, which systemd reads as "never", is refused: no `Duration` means never. A
    /// span systemd accepts but no service schedules (beyond
    /// ``/PreciseTimerCore/TimerService/maximumDuration``, about 146 years, such as `"500y"`)
    /// is returned as read; scheduling it throws ``/PreciseTimerCore/PreciseTimerError/Code/invalidDelay``.
    ///
    /// - Parameter systemdTimeSpan: The text of a `…Sec=` setting, as `systemd-analyze timespan`
    ///   takes it.
    /// - Throws: ``/PreciseTimerCore/PreciseTimerError`` with code
    ///   ``/PreciseTimerCore/PreciseTimerError/Code/invalidDelay``, `value` the text as given and
    ///   `detail` what is wrong and where (a byte offset): empty text, an unknown unit (`5x`,
    ///   `5ns`), a decimal point without digits (`5.`), a negative value (`-1s`), a value past
    ///   2^64 - 1 µs, `infinity`. Never traps.
    public init(systemdTimeSpan: String) throws(PreciseTimerError) {
        let microseconds: UInt64
        do {
            microseconds = try SystemdTimeSpan.microseconds(systemdTimeSpan)
        } catch {
            throw PreciseTimerError(.invalidDelay, value: systemdTimeSpan, detail: error.detail)
        }
        guard microseconds != SystemdTimeSpan.infinity else {
            throw PreciseTimerError(
                .invalidDelay, value: systemdTimeSpan,
                detail: "infinity is systemd's \"never\", which no Duration stands for")
        }
        self.init(microseconds: microseconds)
    }

    /// A whole number of microseconds, up to 2^64 - 1.
    init(microseconds: UInt64) {
        self.init(
            secondsComponent: Int64(microseconds / 1_000_000),
            attosecondsComponent: Int64(microseconds % 1_000_000) * 1_000_000_000_000)
    }

    /// The span as systemd writes it (`format_timespan()`: `1h 30min`, `2.500000s`, `0`), in
    /// whole microseconds rounded up; a negative span is written with a leading `-` (which
    /// ``init(systemdTimeSpan:)`` refuses, as a service would). systemd reads the text back as
    /// the same span.
    package var systemdTimeSpanDescription: String {
        let (seconds, attoseconds) = self.components
        if seconds < 0 || attoseconds < 0 {
            return "-" + (Duration.zero - self).systemdTimeSpanDescription
        }
        let wholeSeconds = UInt64(seconds)
        let microseconds = (attoseconds + 999_999_999_999) / 1_000_000_000_000
        let (scaled, overflow) = wholeSeconds.multipliedReportingOverflow(by: 1_000_000)
        guard !overflow, scaled <= SystemdTimeSpan.infinity - 1 - UInt64(microseconds) else {
            // Past what systemd can hold: only a `var` set by hand gets here.
            return "\(seconds)s"
        }
        return SystemdTimeSpan.format(scaled + UInt64(microseconds))
    }
}
