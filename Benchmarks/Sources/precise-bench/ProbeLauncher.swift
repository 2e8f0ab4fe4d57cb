import Foundation

/// Starts ``Probe``s in child processes of this same executable and reads back their results.
enum ProbeLauncher {
    /// Runs one probe and waits for it; `environment` replaces the child's (`nil`: this process's).
    static func run(_ probe: Probe, environment: [String: String]? = nil) -> Result<ProbeResult, BenchmarkSkip> {
        Self.run([probe], environment: environment)[0]
    }

    /// Starts every probe at once, then waits for all (for measurements that do not compete,
    /// such as idle CPU). Each child's stderr goes to this process's stderr.
    static func run(_ probes: [Probe], environment: [String: String]? = nil) -> [Result<ProbeResult, BenchmarkSkip>] {
        let executable = URL(fileURLWithPath: Self.executablePath())
        var started: [Result<(Process, Pipe), BenchmarkSkip>] = []
        for probe in probes {
            let process = Process()
            process.executableURL = executable
            process.arguments = ["--probe", probe.encoded]
            if let environment { process.environment = environment }
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.standardError
            do {
                try process.run()
                started.append(.success((process, output)))
            } catch {
                started.append(.failure(BenchmarkSkip(reason: "could not start: \(error)")))
            }
        }
        return started.map { start in
            start.flatMap { process, output in
                // Read before waiting: a result larger than the pipe's buffer would block the child.
                let data = output.fileHandleForReading.readDataToEndOfFile()
                process.waitUntilExit()
                guard process.terminationStatus == 0 else {
                    return .failure(BenchmarkSkip(reason: "probe failed (status \(process.terminationStatus))"))
                }
                do {
                    return .success(try JSONDecoder().decode(ProbeResult.self, from: data))
                } catch {
                    return .failure(BenchmarkSkip(reason: "unreadable probe result: \(error)"))
                }
            }
        }
    }

    /// This executable's path, from `/proc/self/exe` (argv[0] may be relative or a bare name).
    private static func executablePath() -> String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
}
