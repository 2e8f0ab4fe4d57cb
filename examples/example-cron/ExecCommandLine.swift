import PreciseTimerCalendar

/// An `ExecStart=` line of a `.service` file, split as systemd splits it (systemd.service(5),
/// "Command lines"; systemd.syntax(7), "Quoting"), for the subset a job runner needs.
///
/// Understood: words separated by spaces or tabs, `"…"` and `'…'` quoting, the C escapes
/// `\n \t \\ \" \' \ ` (a backslash before a space keeps it in the word), and the prefix `-`
/// (a failing status is logged, not counted as a failure). Refused rather than run differently
/// from systemd: `$VAR` and `${VAR}` (systemd substitutes the unit's environment, which this
/// runner does not have; a `$` is refused inside quotes too: put the line in `name.command`, which
/// the shell runs), `%` specifiers other
/// than `%%`, the prefixes `@ + ! :`, and `;` separating several commands.
struct ExecCommandLine: Sendable, Equatable {
    var arguments: [String]
    /// The `-` prefix: a non-zero exit is not a failure.
    var ignoresFailure = false

    struct Refusal: Error, CustomStringConvertible {
        var description: String
    }

    init(_ line: String) throws(Refusal) {
        var text = Substring(UnitFileReader.strip(Substring(line)))
        while let first = text.first, "-@+!:".contains(first) {
            guard first == "-" else {
                throw Refusal(description: "the prefix '\(first)' is not supported by example-cron (only '-')")
            }
            self.ignoresFailure = true
            text = text.dropFirst()
        }
        var words: [String] = []
        var current = ""
        var inWord = false
        var quote: Character?
        var iterator = text.makeIterator()
        while let character = iterator.next() {
            if character == "\\" {
                guard let escaped = iterator.next() else { throw Refusal(description: "a trailing backslash") }
                switch escaped {
                case "n": current.append("\n")
                case "t": current.append("\t")
                default: current.append(escaped)
                }
                inWord = true
            } else if let open = quote {
                if character == open { quote = nil } else { current.append(character) }
            } else if character == "\"" || character == "'" {
                quote = character
                inWord = true
            } else if character == " " || character == "\t" {
                if inWord { words.append(current) }
                current = ""
                inWord = false
            } else {
                current.append(character)
                inWord = true
            }
        }
        guard quote == nil else { throw Refusal(description: "an unterminated quote") }
        if inWord { words.append(current) }
        guard !words.isEmpty else { throw Refusal(description: "no command") }
        self.arguments = try words.map { word throws(Refusal) in
            if word == ";" { throw Refusal(description: "several commands in one line (';')") }
            if word.contains("$") {
                throw Refusal(description: "variable substitution ('\(word)'); put the line in a .command file")
            }
            return try Self.expandingPercent(word)
        }
    }

    /// `%%` is `%`; any other specifier is systemd's text from a unit's name and state.
    private static func expandingPercent(_ word: String) throws(Refusal) -> String {
        guard word.contains("%") else { return word }
        var result = ""
        var iterator = word.makeIterator()
        while let character = iterator.next() {
            guard character == "%" else {
                result.append(character)
                continue
            }
            guard iterator.next() == "%" else {
                throw Refusal(description: "a % specifier in '\(word)' (only %% is supported)")
            }
            result.append("%")
        }
        return result
    }
}
