import Glibc

/// Child processes for the tests that run the package's executables as a user runs them
/// (`example-cron`, the SIGTERM probe, fleet replicas): started as a supervisor starts a daemon,
/// reaped with a bound, orchestrated on a thread of their own. Every call but ``blocking(_:)``
/// blocks its thread.
package enum ChildProcess {
    /// How a child ended.
    package enum Outcome: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case killed(Int32)
        /// Still running after the bound it was given (then killed with SIGKILL).
        case hung
        /// It could not be started, or waited for: why.
        case notStarted(String)

        package var description: String {
            switch self {
            case .exited(let status): "exited \(status)"
            case .killed(let signal): "killed by signal \(signal)"
            case .hung: "still running after the bound"
            case .notStarted(let reason): "not started: \(reason)"
            }
        }
    }

    /// Runs `body` on a thread of its own (it blocks: it sleeps, spawns and reaps), never on the
    /// cooperative pool, and returns what it returns or throws.
    package static func blocking<T: Sendable, Failure: Error>(
        _ body: @escaping @Sendable () throws(Failure) -> T
    ) async throws(Failure) -> T {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, Failure>, Never>) in
            detachThread {
                do throws(Failure) {
                    continuation.resume(returning: .success(try body()))
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        }
        return try result.get()
    }

    /// Starts `path` with `arguments`, its stdout and stderr to the file `output` and the
    /// attributes of ``withSupervisorSpawnAttributes(_:)``; returns its pid, or the
    /// `posix_spawn` error.
    package static func spawn(_ path: String, _ arguments: [String], output: String) -> Result<pid_t, SpawnError> {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, output, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO)
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = withSupervisorSpawnAttributes { posix_spawn(&pid, path, &actions, &$0, argv, environ) }
        return spawned == 0 ? .success(pid) : .failure(SpawnError(code: spawned))
    }

    /// A `posix_spawn` that failed, with its error number.
    package struct SpawnError: Error, Equatable {
        package let code: Int32
    }

    /// Waits for the child to end, polling every millisecond; `nil` if it still runs after `bound`.
    package static func reap(_ pid: pid_t, within bound: Duration) -> Outcome? {
        let deadline = ContinuousClock.now + bound
        while true {
            var status: Int32 = 0
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid {
                // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
                let signal = status & 0x7f
                return signal == 0 ? .exited((status >> 8) & 0xff) : .killed(signal)
            }
            if result < 0, errno != EINTR { return .notStarted("waitpid: errno \(errno)") }
            if ContinuousClock.now >= deadline { return nil }
            usleep(1_000)
        }
    }

    /// Waits up to `bound` for the child to end; if it still runs, kills it and reports ``Outcome/hung``.
    package static func reapOrKill(_ pid: pid_t, within bound: Duration) -> Outcome {
        if let outcome = Self.reap(pid, within: bound) { return outcome }
        Self.kill(pid)
        return .hung
    }

    /// Kills the child with SIGKILL and reaps it (60 s at most).
    package static func kill(_ pid: pid_t) {
        Glibc.kill(pid, SIGKILL)
        _ = Self.reap(pid, within: .seconds(60))
    }

    /// Spawn attributes for a child started as a supervisor starts a daemon: no signal blocked
    /// (the spawning thread, born of a pool, may block them all) and SIGTERM and SIGINT at their
    /// default action. Valid inside `body` only.
    package static func withSupervisorSpawnAttributes<Result>(_ body: (inout posix_spawnattr_t) -> Result) -> Result {
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGTERM)
        sigaddset(&defaults, SIGINT)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        return body(&attributes)
    }
}
