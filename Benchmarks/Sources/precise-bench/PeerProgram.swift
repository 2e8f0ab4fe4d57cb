import Foundation

/// The peers that are programs of their own, in `Benchmarks/Peers/`: built on first use into
/// `Benchmarks/.build/peers/` (offline: Go's standard library; tokio and tokio-util from Debian's
/// system registry as a cargo directory source), run once per measurement, each printing one
/// JSON line.
enum PeerProgram: String, CaseIterable, Sendable {
    /// Go: `time.AfterFunc` + `Stop` / `Reset`; the repeating timer is a `time.Timer` re-armed with `Reset`.
    case go
    /// tokio: a task per timer (`sleep_until`, then the handler), cancelled with `JoinHandle::abort`.
    case tokio
    /// tokio-util's `DelayQueue`: `insert`, `remove`, `reset`, `poll_expired`.
    case delayQueue = "delayqueue"

    /// What a peer printed: named figures and, for lateness, every call's lateness in ns.
    struct Output: Decodable, Sendable {
        var figures: [String: Double]
        var samples: [Int64]?
    }

    /// The `Benchmarks` folder (this file is `Benchmarks/Sources/precise-bench/PeerProgram.swift`).
    private static let benchmarks = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    private static let buildFolder = benchmarks.appendingPathComponent(".build/peers")

    /// The built executable.
    private var executable: URL {
        switch self {
        case .go: Self.buildFolder.appendingPathComponent("precise-peer-go")
        case .tokio, .delayQueue: Self.buildFolder.appendingPathComponent("cargo/release/precise-peer-tokio")
        }
    }

    /// Arguments before the work's own.
    private var prefix: [String] {
        switch self {
        case .go: []
        case .tokio, .delayQueue: [self.rawValue]
        }
    }

    /// Builds the peer (Go and cargo rebuild only what changed), or says why it cannot run here
    /// and how to install what it needs.
    static func build(_ program: PeerProgram) -> BenchmarkSkip? {
        switch program {
        case .go:
            guard let go = Self.which("go") else {
                return BenchmarkSkip(reason: "not installed: apt-get install golang-go")
            }
            return Self.runBuild(
                go, ["build", "-o", program.executable.path, "."], in: "Peers/go",
                environment: ["GOPROXY": "off", "GO111MODULE": "on"], hint: "apt-get install golang-go")
        case .tokio, .delayQueue:
            let hint = "apt-get install cargo librust-tokio-dev librust-tokio-util-dev"
            guard let cargo = Self.which("cargo") else { return BenchmarkSkip(reason: "not installed: \(hint)") }
            let registry = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/share/cargo/registry")) ?? []
            guard registry.contains(where: { $0.hasPrefix("tokio-1.") }),
                registry.contains(where: { $0.hasPrefix("tokio-util-0.7") })
            else { return BenchmarkSkip(reason: "tokio or tokio-util not in /usr/share/cargo/registry: \(hint)") }
            return Self.runBuild(
                cargo,
                [
                    "build", "--release", "--offline", "--quiet", "--target-dir",
                    Self.buildFolder.appendingPathComponent("cargo").path,
                ],
                in: "Peers/rust", environment: [:], hint: hint)
        }
    }

    /// Runs one measurement: the work's arguments after the peer's own; `environment` replaces
    /// the child's (`nil`: this process's).
    func run(_ arguments: [String], environment: [String: String]? = nil) -> Result<Output, BenchmarkSkip> {
        let process = Process()
        process.executableURL = self.executable
        process.arguments = self.prefix + arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.standardError
        do {
            try process.run()
        } catch {
            return .failure(BenchmarkSkip(reason: "could not start: \(error)"))
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            return .failure(BenchmarkSkip(reason: "failed (status \(process.terminationStatus))"))
        }
        do {
            return .success(try JSONDecoder().decode(Output.self, from: data))
        } catch {
            return .failure(BenchmarkSkip(reason: "unreadable output: \(error)"))
        }
    }

    private static func runBuild(
        _ tool: String, _ arguments: [String], in folder: String, environment: [String: String], hint: String
    ) -> BenchmarkSkip? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        process.currentDirectoryURL = Self.benchmarks.appendingPathComponent(folder)
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = FileHandle.standardError
        process.standardError = FileHandle.standardError
        do {
            try process.run()
        } catch {
            return BenchmarkSkip(reason: "could not start \(tool): \(error)")
        }
        process.waitUntilExit()
        return process.terminationStatus == 0
            ? nil : BenchmarkSkip(reason: "build failed in Benchmarks/\(folder) (see stderr; needs \(hint))")
    }

    /// The first executable `name` on `PATH`, or nil.
    private static func which(_ name: String) -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        var folders = path.split(separator: ":").map(String.init)
        // rustup's cargo lives here, outside the PATH of a non-login shell.
        folders.append(FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cargo/bin").path)
        return folders.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
