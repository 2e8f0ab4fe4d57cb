import Glibc

/// Files for the package's tests that spawn processes (the job runner, the fleet's replicas): a
/// temporary directory with a `units` folder, whole-file writes and reads, and removal. Plain
/// POSIX calls, usable from any thread (the spawning tests block theirs, off the cooperative pool).
package enum TestFiles {
    /// A failed system call, with its `errno`.
    package struct Failure: Error, CustomStringConvertible {
        package let errno: Int32
        package var description: String { "errno \(self.errno)" }
    }

    /// A new directory `/tmp/<prefix>.XXXXXX`, holding an empty `units` directory unless
    /// `units` is false.
    package static func temporaryDirectory(prefix: String, units: Bool = true) throws(Failure) -> String {
        var template = Array("/tmp/\(prefix).XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(errno: errno) }
        let directory = String(cString: made)
        guard !units || mkdir(directory + "/units", 0o755) == 0 else { throw Failure(errno: errno) }
        return directory
    }

    /// Writes `text` to `path` (created or truncated).
    package static func write(_ path: String, _ text: String) throws(Failure) {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw Failure(errno: errno) }
        defer { close(descriptor) }
        let bytes = Array(text.utf8)
        guard Glibc.write(descriptor, bytes, bytes.count) == bytes.count else { throw Failure(errno: errno) }
    }

    /// The whole of `path`, as UTF-8.
    package static func read(_ path: String) throws(Failure) -> String {
        guard let file = fopen(path, "r") else { throw Failure(errno: errno) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count == 0 { break }
            bytes += buffer[..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// Removes `directory` and what it holds (`rm -rf`): only a directory the test made.
    package static func remove(_ directory: String) {
        let words: [String] = ["/bin/rm", "-rf", directory]
        let argv = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, "/bin/rm", nil, nil, argv, environ) == 0 else { return }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0, errno == EINTR {}
    }

    /// The executable `name` built beside the running test bundle (the build's products
    /// directory), if it is there: a test target that depends on an executable target gets it built.
    package static func builtProduct(_ name: String) -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        let executable = String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard let slash = executable.lastIndex(of: "/") else { return nil }
        let path = String(executable[..<slash]) + "/" + name
        return access(path, X_OK) == 0 ? path : nil
    }
}
