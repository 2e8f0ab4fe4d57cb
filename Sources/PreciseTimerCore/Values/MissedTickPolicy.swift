/// What a repeating timer does when it could not fire on time (the loop was busy, the handler
/// ran longer than a period, the machine was loaded or suspended).
///
/// A period counts as missed when a timer is taken a whole interval or more after its deadline.
public enum MissedTickPolicy: Sendable, Hashable {
    /// The default: one call for all the periods that passed, answering the latest grid point;
    /// `Tick.missed` counts the skipped ones, and the grid `start + k·interval` is kept (no
    /// drift). This is what Dispatch does. After a suspend or a long stall: one call, then on
    /// the grid again.
    case skip
    /// One call per missed period, back to back, then on the original grid; at most
    /// ``maximumBurst`` catch-up calls in a row: a timer still a whole period behind after that
    /// skips to the latest grid point as ``skip`` does (reporting the periods dropped in
    /// `Tick.missed`), so a burst timer whose calls outlast its period can never starve the others.
    case burst
    /// While on time, the fixed-rate grid; after a call that missed a whole period, the grid
    /// restarts one interval after that call (`Tick.firedAt + interval`), as libevent's
    /// `EV_PERSIST` does. A call late by less than a period keeps the grid. (tokio's
    /// `MissedTickBehavior::Delay` differs: it restarts after any tick more than 5 ms late.)
    /// `Tick.missed` reports the periods skipped.
    case delay

    /// The most catch-up calls a ``burst`` timer makes in a row: 16.
    public static let maximumBurst = 16
}
