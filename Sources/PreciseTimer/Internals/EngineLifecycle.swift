/// The libevent engine's lifecycle as one value: which thread drives the base, and what a stop,
/// a callback and the loop's end must do. Transitions are pure and return the action to take;
/// the engine performs it after releasing the lock that guards this value (as the core's
/// registry does, and swift-nio's state machines).
///
/// The thread that drives a base is recorded when it is known, never guessed: the own loop
/// thread as it starts its loop, a caller's loop thread as it runs a callback of the service.
/// Until then, no stop touches a caller's base from outside a callback.
package struct EngineLifecycle: Equatable {
    /// A thread, by a number no other thread of the process ever has (the engine's
    /// `ThreadIdentity`; a `pthread_t` is reused once its thread has exited).
    package typealias Thread = UInt

    package enum State: Equatable {
        /// Own base: the loop thread was created and has not started its loop.
        case starting
        /// The loop runs: on `thread` (a caller's base: `nil` until a callback of the service
        /// ran), inside a callback of the service now when `inCallback`.
        case running(Thread?, inCallback: Bool)
        /// A stop was asked for; the loop lets go at its next pass (an own loop breaks, a
        /// caller's loop takes the events off its base).
        case stopRequested(Thread?, inCallback: Bool)
        /// libevent is done with the service: the own loop thread freed the base and exits, or
        /// the events are off the caller's base.
        case stopped
        /// A forked child ran a callback on a base it inherited: the events are off the child's
        /// copy of the base; the parent's service is untouched.
        case leftInheritedBase
    }

    /// Whether the base is the engine's own (a thread of its own drives it).
    package let ownsBase: Bool
    package private(set) var state: State

    package init(ownsBase: Bool) {
        self.ownsBase = ownsBase
        self.state = ownsBase ? .starting : .running(nil, inCallback: false)
    }

    /// Whether libevent is done with the service.
    package var isStopped: Bool {
        switch self.state {
        case .stopped, .leftInheritedBase: true
        case .starting, .running, .stopRequested: false
        }
    }

    // MARK: The own loop thread

    /// The own loop thread is about to loop. `false`: a stop came first; free libevent at once.
    package mutating func loopStarts(on thread: Thread) -> Bool {
        switch self.state {
        case .starting:
            self.state = .running(thread, inCallback: false)
            return true
        case .stopRequested:
            self.state = .stopRequested(thread, inCallback: false)
            return false
        case .running, .stopped, .leftInheritedBase:
            preconditionFailure("EngineLifecycle: the loop started twice")
        }
    }

    /// The own loop returned (broken, or failed) and libevent is freed.
    package mutating func loopEnded() {
        self.state = .stopped
    }

    // MARK: Callbacks

    /// What a callback of the service does, decided as it begins.
    package enum CallbackAction: Equatable {
        /// Run timers (and whatever the callback is for).
        case run
        /// A caller's loop serves a requested stop: take the events off now, run nothing.
        case detach
        /// A forked child runs a base it inherited: take the events off the child's copy of the
        /// base and touch nothing else (the descriptors behind them are the parent's).
        case leaveInheritedBase
        /// Nothing: the service has let go already.
        case ignore
    }

    package mutating func callbackBegins(on thread: Thread, inherited: Bool) -> CallbackAction {
        if inherited {
            guard self.state != .leftInheritedBase else { return .ignore }
            self.state = .leftInheritedBase
            return .leaveInheritedBase
        }
        switch self.state {
        case .running:
            self.state = .running(thread, inCallback: true)
            return .run
        case .stopRequested:
            guard self.ownsBase else {
                self.state = .stopped
                return .detach
            }
            self.state = .stopRequested(thread, inCallback: true)
            return .run  // The own loop breaks at the doorbell.
        case .starting, .stopped, .leftInheritedBase:
            return .ignore
        }
    }

    /// A callback of the service returns. `true`: take the events off the caller's base now (a
    /// stop came during the callback, from a `.loop` handler or another thread).
    package mutating func callbackEnds(coreClosed: Bool) -> Bool {
        switch self.state {
        case .running(let thread, inCallback: true):
            guard coreClosed, !self.ownsBase else {
                self.state = .running(thread, inCallback: false)
                return false
            }
            self.state = .stopped
            return true
        case .stopRequested(let thread, inCallback: true):
            guard !self.ownsBase else {
                self.state = .stopRequested(thread, inCallback: false)
                return false
            }
            self.state = .stopped
            return true
        default:
            return false
        }
    }

    // MARK: Stopping

    /// What a stop asked for on `thread` does (the core is closed before).
    package enum StopAction: Equatable {
        /// Take the events off the caller's base now: this is its loop thread, between callbacks.
        case detachNow
        /// This thread is inside a callback of the service (a `.loop` handler): the events come
        /// off, or the own loop breaks, as that callback returns. Do not wait.
        case letTheCallbackFinish
        /// Ring the doorbell and wait for the loop to let go: without bound for the own thread,
        /// at most the engine's bound for a caller's base (its loop may not run).
        case ringAndWait(bounded: Bool)
        /// libevent is done with the service already.
        case none
    }

    package mutating func stop(on thread: Thread) -> StopAction {
        switch self.state {
        case .starting:
            self.state = .stopRequested(nil, inCallback: false)
            return .ringAndWait(bounded: false)
        case .running(let loop, let inCallback), .stopRequested(let loop, let inCallback):
            guard let loop, loop == thread else {
                self.state = .stopRequested(loop, inCallback: inCallback)
                return .ringAndWait(bounded: !self.ownsBase)
            }
            if self.ownsBase || inCallback {
                self.state = .stopRequested(loop, inCallback: inCallback)
                return .letTheCallbackFinish
            }
            self.state = .stopped
            return .detachNow
        case .stopped, .leftInheritedBase:
            return .none
        }
    }
}
