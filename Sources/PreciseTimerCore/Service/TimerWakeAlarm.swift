/// `WakeSystem=`'s alarm: armed at a unit's next elapse beside the timer that runs it, on a clock
/// that runs through suspend and wakes the machine (`CLOCK_BOOTTIME_ALARM`). It runs nothing: once
/// the machine is awake, the unit's own timer (on the continuous clock) fires as for any elapse
/// slept through.
package protocol TimerWakeAlarm: AnyObject, Sendable {
    /// Arms the alarm `delay` from now (`.zero` or less: as soon as possible), replacing the
    /// previous arming.
    func arm(after delay: Duration)
    /// Disarms the alarm.
    func disarm()
}
