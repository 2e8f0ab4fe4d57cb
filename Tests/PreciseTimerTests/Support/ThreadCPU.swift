import Glibc

/// CPU time of this process's threads, from `/proc/self/task`.
enum ThreadCPU {
    /// The CPU time (user + system) the one thread named `name` has used so far, or `nil` when no
    /// thread, or more than one, has that name.
    static func time(ofThreadNamed name: String) -> Duration? {
        var found: [Duration] = []
        for task in self.tasks() where self.read("/proc/self/task/\(task)/comm") == name + "\n" {
            guard let stat = self.read("/proc/self/task/\(task)/stat") else { continue }
            // Fields after the name, which is in parentheses and may hold spaces: utime and stime
            // are fields 14 and 15 of the whole line, in clock ticks.
            guard let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 13, let user = Int64(fields[11]), let system = Int64(fields[12]) else { continue }
            let ticksPerSecond = Int64(sysconf(Int32(_SC_CLK_TCK)))
            found.append(.nanoseconds((user + system) * 1_000_000_000 / ticksPerSecond))
        }
        return found.count == 1 ? found[0] : nil
    }

    private static func tasks() -> [String] {
        guard let directory = opendir("/proc/self/task") else { return [] }
        defer { closedir(directory) }
        var tasks: [String] = []
        while let entry = readdir(directory) {
            let task = withUnsafeBytes(of: entry.pointee.d_name) {
                String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self)
            }
            if task.first?.isNumber == true { tasks.append(task) }
        }
        return tasks
    }

    private static func read(_ path: String) -> String? {
        guard let file = fopen(path, "r") else { return nil }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 1_024)
        guard fgets(&buffer, 1_024, file) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
