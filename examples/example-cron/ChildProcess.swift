import Glibc
import PreciseTimerCore

/// One run of a job's command: a child process started with `posix_spawn`, its output passed
/// through line by line behind a prefix, and its exit awaited on a thread of its own.
///
/// The child gets a process group of its own (a terminal's Ctrl-C reaches the runner, which then
/// decides how long the job may finish; `terminate` signals the whole group, as systemd signals a
/// service's cgroup), no blocked signal and every signal at its default action (the runner's
/// signal sources set SIGTERM and SIGINT to ignored, which a child would otherwise inherit).
struct ChildProcess: Sendable {
    /// How a run ended.
    enum Status: Sendable, Equatable, CustomStringConvertible {
        case exited(Int32)
        case killed(Int32)
        /// `posix_spawn` failed (the program is missing, not executable, …): the `errno` it gave.
        case notStarted(Int32)

        var isSuccess: Bool { self == .exited(0) }

        var description: String {
            switch self {
            case .exited(let code): "exit \(code)"
            case .killed(let signal): "killed by signal \(signal)"
            case .notStarted(let error): "not started: \(String(cString: strerror(error)))"
            }
        }
    }

    let pid: pid_t

    /// Starts `argv` with `environment`, its standard output and error both going to `prefix`ed
    /// lines of `output`. `argv[0]` is searched in `PATH` when it has no slash.
    ///
    /// - Returns: The child and a way to await its status, or the `errno` of a failed spawn.
    static func spawn(
        _ argv: [String], environment: [String], prefix: String, output: Output
    ) -> Result<(ChildProcess, exit: @Sendable () async -> Status), Errno> {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { return .failure(Errno(errno)) }
        // Close-on-exec: another job's child, spawned meanwhile, must not hold this pipe open.
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDOUT_FILENO)
        posix_spawn_file_actions_adddup2(&actions, ends[1], STDERR_FILENO)

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigmask(&attributes, &none)
        var all = sigset_t()
        sigfillset(&all)
        posix_spawnattr_setsigdefault(&attributes, &all)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(
            &attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let cArguments = argv.map { strdup($0) } + [nil]
        let cEnvironment = environment.map { strdup($0) } + [nil]
        defer {
            cArguments.forEach { free($0) }
            cEnvironment.forEach { free($0) }
        }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, argv[0], &actions, &attributes, cArguments, cEnvironment)
        close(ends[1])
        guard spawned == 0 else {
            close(ends[0])
            return .failure(Errno(spawned))
        }
        let child = ChildProcess(pid: pid)
        let reader = ends[0]
        let exit: @Sendable () async -> Status = {
            await withCheckedContinuation { continuation in
                startThread {
                    continuation.resume(returning: child.pump(reader, prefix: prefix, output: output))
                }
            }
        }
        return .success((child, exit))
    }

    /// Sends `signal` to the child's process group (the command and whatever it started).
    func terminate(with signal: Int32) {
        kill(-self.pid, signal)
    }

    /// Passes the output through until the child has exited, then reaps it. Blocks its thread.
    ///
    /// Not "read until end of file": a command that leaves a background process holding the
    /// output open would never end. The pipe is polled, 20 ms at a time, beside `waitpid(WNOHANG)`;
    /// once the child is reaped, what is left in the pipe is read without waiting.
    private func pump(_ descriptor: Int32, prefix: String, output: Output) -> Status {
        defer { close(descriptor) }
        var pending: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var open = true
        // Reads what the pipe holds; with `wait`, first waits up to 20 ms for something.
        func readAvailable(wait: Bool) {
            var timeout: Int32 = wait ? 20 : 0
            while open {
                var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
                let ready = poll(&entry, 1, timeout)
                if ready < 0, errno == EINTR { continue }
                guard ready > 0 else { return }
                let count = read(descriptor, &buffer, buffer.count)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else {
                    open = false
                    return
                }
                pending += buffer[..<count]
                while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                    output.line(prefix + String(decoding: pending[..<newline], as: UTF8.self))
                    pending.removeSubrange(...newline)
                }
                timeout = 0
            }
        }
        while true {
            var status: Int32 = 0
            let reaped = waitpid(self.pid, &status, WNOHANG)
            if reaped == self.pid {
                readAvailable(wait: false)
                if !pending.isEmpty { output.line(prefix + String(decoding: pending, as: UTF8.self)) }
                // WIFEXITED / WEXITSTATUS / WTERMSIG, which Swift does not import.
                let signal = status & 0x7f
                return signal == 0 ? .exited((status >> 8) & 0xff) : .killed(signal)
            }
            if reaped < 0, errno != EINTR { return .notStarted(errno) }
            if open {
                readAvailable(wait: true)
            } else {
                usleep(20_000)
            }
        }
    }
}

/// An `errno` value.
struct Errno: Error, CustomStringConvertible {
    let code: Int32
    init(_ code: Int32) { self.code = code }
    var description: String { String(cString: strerror(self.code)) }
}

/// Runs `body` on a new detached thread (the package's `PosixThread`): for calls that block
/// (waiting for a child), which must not hold one of Swift concurrency's few cooperative threads.
func startThread(_ body: @escaping @Sendable () -> Void) {
    if case .failure(let error) = PosixThread.start(detached: true, body) {
        preconditionFailure("pthread_create failed: \(error.code)")
    }
}
