#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif
import Synchronization

/// Holds shutdown signals that arrive while a daemon starts, before its `ServiceGroup` listens for
/// them, and hands them to the group once it does.
///
/// A `ServiceGroup` installs its signal handlers inside `run()`, after everything the daemon does
/// first (parsing options, opening stores, creating services). Until then a signal has its
/// default action: SIGTERM or SIGINT ends the process at once, killed by the signal (status 143
/// or 130 in a shell), with no graceful shutdown. A supervisor that stops a daemon just after
/// starting it (`systemctl restart` twice, a deploy rolled back, a test harness) meets that
/// window. Call ``hold(_:)`` first thing in `main`:
///
/// ```swift
/// EarlySignals.hold()     // SIGTERM and SIGINT, from here on
/// let timers = try PreciseTimer()
/// let group = ServiceGroup(services: [timers, server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
/// try await group.run()   // a SIGTERM that came before is delivered now: a graceful stop
/// ```
///
/// A held signal is recorded, not acted on. ``PreciseTimer``'s `run()` calls ``deliverHeld()``
/// as it starts (the group listens by then: it installs its handlers before it starts any
/// service), which sends the held signals again to the process, where the group's handlers now
/// catch them. A daemon whose group runs no ``PreciseTimer`` calls ``deliverHeld()`` at the start
/// of one of its own services' `run()`.
///
/// What it cannot hold: a signal that arrives before `hold` runs (while the program loads, or
/// before an `async` `main` reaches its first line, a few milliseconds) still ends the process
/// with the default action. systemd counts an exit by SIGTERM or SIGINT as a clean stop.
///
/// - Important: Hold only signals the group listens for (its `gracefulShutdownSignals` or
///   `cancellationSignals`): a held signal whose handler nobody replaces is never delivered, so
///   the process goes on as if it had been ignored.
public enum EarlySignals {
    /// Holds `signals` from now until a handler of the program (a `ServiceGroup`'s) replaces the
    /// holding one; see ``EarlySignals``.
    ///
    /// Only a signal whose action is still the default is held: one the program handles or
    /// ignores already is left as it is. Calling it again is harmless.
    ///
    /// - Parameter signals: Signal numbers; SIGTERM and SIGINT by default. Numbers outside
    ///   1...63, and SIGKILL and SIGSTOP (which cannot be caught), are skipped.
    /// - Important: Call it first thing in `main`, before any other work, so the window it
    ///   leaves open is as short as it can be.
    public static func hold(_ signals: [Int32] = [SIGTERM, SIGINT]) {
        for signal in signals where (1...63).contains(signal) && signal != SIGKILL && signal != SIGSTOP {
            var current = sigaction()
            guard sigaction(signal, nil, &current) == 0, isDefault(current) else { continue }
            var action = sigaction()
            setHandler(&action, holdingHandler)
            sigemptyset(&action.sa_mask)
            action.sa_flags = SA_RESTART
            sigaction(signal, &action, nil)
        }
    }

    /// Sends every signal that was held, and whose holding handler has been replaced since (the
    /// group listens), to the process again; leaves the others held.
    ///
    /// ``PreciseTimer``'s `run()` calls it as it starts. Cheap and idempotent: with nothing held,
    /// it reads one atomic.
    public static func deliverHeld() {
        let caught = caughtSignals.load(ordering: .sequentiallyConsistent)
        guard caught != 0 else { return }
        for signal in Int32(1)...63 where caught & bit(signal) != 0 {
            var current = sigaction()
            // Still ours: nobody listens yet, so delivering it would only hold it again.
            guard sigaction(signal, nil, &current) == 0, !isHolding(current) else { continue }
            let (previous, _) = caughtSignals.bitwiseAnd(~bit(signal), ordering: .sequentiallyConsistent)
            // Only one caller sends a signal that was caught once.
            if previous & bit(signal) != 0 {
                kill(getpid(), signal)
            }
        }
    }
}

/// The held signals that arrived and are not delivered yet, one bit per number.
private let caughtSignals = Atomic<UInt64>(0)

private func bit(_ signal: Int32) -> UInt64 { 1 << UInt64(signal) }

/// The holding handler: records the signal, nothing else (a lock-free atomic is
/// async-signal-safe).
private func holdSignal(_ signal: Int32) {
    guard (1...63).contains(signal) else { return }
    caughtSignals.bitwiseOr(bit(signal), ordering: .sequentiallyConsistent)
}

/// The one C pointer to `holdSignal`, installed and compared by identity.
private let holdingHandler: @convention(c) (Int32) -> Void = holdSignal

#if canImport(Darwin)
    private func handlerAddress(_ action: sigaction) -> UInt {
        unsafeBitCast(action.__sigaction_u.__sa_handler, to: UInt.self)
    }
    private func setHandler(_ action: inout sigaction, _ handler: @convention(c) (Int32) -> Void) {
        action.__sigaction_u.__sa_handler = handler
    }
#else
    private func handlerAddress(_ action: sigaction) -> UInt {
        unsafeBitCast(action.__sigaction_handler.sa_handler, to: UInt.self)
    }
    private func setHandler(_ action: inout sigaction, _ handler: @convention(c) (Int32) -> Void) {
        action.__sigaction_handler.sa_handler = handler
    }
#endif

/// SIG_DFL is the null handler.
private func isDefault(_ action: sigaction) -> Bool { handlerAddress(action) == 0 }

private func isHolding(_ action: sigaction) -> Bool {
    handlerAddress(action) == unsafeBitCast(holdingHandler, to: UInt.self)
}
