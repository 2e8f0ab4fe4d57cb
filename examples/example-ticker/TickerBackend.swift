import ArgumentParser

/// Which timer services a run compares (`--backend`).
enum TickerBackend: String, CaseIterable, ExpressibleByArgument, Sendable {
    /// `PreciseTimer` only: libevent on its own thread.
    case precise
    /// `DispatchReferenceTimer` only: one `DispatchSourceTimer` on a private serial queue.
    case dispatch
    /// Both at the same time, each its own service.
    case both

    /// Whether the run starts a `PreciseTimer`.
    var includesPrecise: Bool { self != .dispatch }
    /// Whether the run starts a `DispatchReferenceTimer`.
    var includesDispatch: Bool { self != .precise }
}
