import Glibc
import PreciseTimer
import PreciseTimerCalendar

/// A timer unit of the units directory and what it runs.
///
/// `name.timer` runs the `ExecStart=` lines of `name.service` (or of the service its `Unit=`
/// names), one after another, stopping at the first that fails; without a `.service`, the shell
/// line in `name.command`, as `/bin/sh -c 'line'`.
struct Job: Sendable {
    /// The unit's name without `.timer`.
    let name: String
    let unit: TimerUnit
    let commands: [ExecCommandLine]
    /// Where the commands came from (`logrotate.service`, `demo.command`), for the log.
    let source: String

    /// The unit's ID: its file name, as systemd names its stamp (`stamp-logrotate.timer`).
    var id: TimerID { TimerID("\(self.name).timer") }

    struct LoadError: Error, CustomStringConvertible {
        var description: String
    }

    /// Every `*.timer` of `directory`, in name order, with its commands.
    ///
    /// - Throws: `LoadError` naming each file that does not parse or has no command: a runner
    ///   refuses to start with a unit it would silently not run.
    static func load(from directory: String) throws(LoadError) -> [Job] {
        guard let entries = try? Self.fileNames(in: directory) else {
            throw LoadError(description: "\(directory): cannot read the directory (\(Errno(errno)))")
        }
        var jobs: [Job] = []
        var problems: [String] = []
        for file in entries.sorted() where file.hasSuffix(".timer") {
            let name = String(file.dropLast(".timer".count))
            if name.hasSuffix("@") {
                problems.append("\(file): a template unit needs an instance name (copy it as name@instance.timer)")
                continue
            }
            do {
                jobs.append(try Self.load(name, in: directory))
            } catch {
                problems.append("\(file): \(error)")
            }
        }
        guard problems.isEmpty else { throw LoadError(description: problems.joined(separator: "\n")) }
        guard !jobs.isEmpty else { throw LoadError(description: "\(directory): no *.timer file") }
        return jobs
    }

    private static func load(_ name: String, in directory: String) throws -> Job {
        let unit = try TimerUnit(try readFile("\(directory)/\(name).timer"))
        // Unit=other.service, if the timer names one (TimerUnit lists it among the ignored lines).
        let serviceName =
            unit.ignored.first { $0.hasPrefix("Unit=") }.map { String($0.dropFirst("Unit=".count)) }
            ?? "\(name).service"
        if let service = try? readFile("\(directory)/\(serviceName)") {
            let commands = try Self.execStartLines(service).map { line throws(ExecCommandLine.Refusal) in
                try ExecCommandLine(line)
            }
            guard !commands.isEmpty else { throw LoadError(description: "\(serviceName) has no ExecStart=") }
            return Job(name: name, unit: unit, commands: commands, source: serviceName)
        }
        if let shellLine = try? readFile("\(directory)/\(name).command") {
            let line = shellLine.split(separator: "\n").map { UnitFileReader.strip($0) }
                .filter { !$0.isEmpty && !$0.hasPrefix("#") }.joined(separator: "\n")
            guard !line.isEmpty else { throw LoadError(description: "\(name).command is empty") }
            return Job(
                name: name, unit: unit, commands: [ExecCommandLine(shell: line)], source: "\(name).command")
        }
        throw LoadError(description: "no \(serviceName) and no \(name).command beside it")
    }

    /// The `ExecStart=` values of a service file's `[Service]` section, its lines read as
    /// systemd reads them (`UnitFileReader`: comments, continuations, whitespace), an empty
    /// `ExecStart=` dropping the values before it. Every other key is left alone.
    static func execStartLines(_ text: String) -> [String] {
        var inService = false
        var result: [String] = []
        for line in UnitFileReader.lines(text).map(\.text) {
            if line.hasPrefix("[") {
                inService = line == "[Service]"
                continue
            }
            guard inService, let equals = line.firstIndex(of: "=") else { continue }
            guard UnitFileReader.strip(line[..<equals]) == "ExecStart" else { continue }
            let value = UnitFileReader.strip(line[line.index(after: equals)...])
            if value.isEmpty { result.removeAll() } else { result.append(value) }
        }
        return result
    }

    private static func fileNames(in directory: String) throws -> [String] {
        guard let stream = opendir(directory) else { throw Errno(errno) }
        defer { closedir(stream) }
        var names: [String] = []
        while let entry = readdir(stream) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { bytes in
                String(decoding: bytes.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name != ".", name != ".." { names.append(name) }
        }
        return names
    }
}

extension ExecCommandLine {
    /// A shell line, run as `/bin/sh -c line`.
    init(shell line: String) {
        self.arguments = ["/bin/sh", "-c", line]
    }
}

/// The whole file, as UTF-8.
func readFile(_ path: String) throws -> String {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { throw Errno(errno) }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0, errno == EINTR { continue }
        guard count >= 0 else { throw Errno(errno) }
        if count == 0 { break }
        bytes += buffer[..<count]
    }
    return String(decoding: bytes, as: UTF8.self)
}
