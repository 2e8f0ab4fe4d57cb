/// The lines of a unit file as systemd 252's `config_parse()` reads them
/// (`src/shared/conf-parser.c`): comments dropped, continuations joined, whitespace stripped.
///
/// Ground rules, each systemd's:
/// - A line ends at `\n`, `\r` or NUL; a run of different ones (`\r\n`, `\n\r`) is one end, so
///   line numbers are the ones systemd prints in its warnings.
/// - A line whose first character after whitespace is `#` or `;` is a comment, even inside a
///   continuation (it is skipped and the continuation goes on). Nothing else is a comment:
///   `OnCalendar=daily # 3am` is a value with a `#` in it.
/// - A line ending in an odd number of backslashes continues on the next one; the last
///   backslash becomes a space. A continuation still open at the end of the text is read as is,
///   its last line counted one past the text's last, as systemd counts it.
/// - A UTF-8 byte order mark at the start of a line is dropped once (after the comment check,
///   so a mark before `#` makes a line that is not a comment, as in systemd).
/// - Whitespace is systemd's `WHITESPACE`: space, tab, newline, carriage return.
package enum UnitFileReader {
    /// One logical line: its text stripped, and the physical lines it came from (1-based).
    package struct Line {
        package var text: String
        package var first: Int
        package var last: Int

        /// "line 4", or "lines 4-6" for a continued line.
        var place: String { self.first == self.last ? "line \(self.first)" : "lines \(self.first)-\(self.last)" }
    }

    package static func lines(_ text: String) -> [Line] {
        var result: [Line] = []
        var continuation: (text: [UInt8], first: Int)?
        var sawByteOrderMark = false
        var number = 0
        for physical in Self.physicalLines(Array(text.utf8)) {
            number += 1
            var line = physical[...]
            if let leading = line.first(where: { !Self.isWhitespace($0) }),
                leading == UInt8(ascii: "#") || leading == UInt8(ascii: ";")
            {
                continue
            }
            if !sawByteOrderMark, line.starts(with: [0xEF, 0xBB, 0xBF]) {
                line = line.dropFirst(3)
                sawByteOrderMark = true
            }
            let first = continuation?.first ?? number
            // An open continuation ends in the space that replaced its backslash, so a run of
            // backslashes at the end lies within this line. Appending in place keeps a file of
            // many continued lines linear.
            let backslashes = line.reversed().prefix(while: { $0 == UInt8(ascii: "\\") }).count
            var joined = continuation?.text ?? []
            continuation = nil
            joined += line
            if backslashes % 2 == 1 {
                joined[joined.count - 1] = UInt8(ascii: " ")
                continuation = (joined, first)
                continue
            }
            Self.append(joined, first: first, last: number, to: &result)
        }
        if let open = continuation {
            // systemd counts one more line here (`parse_line(…, ++line, …)` after its loop).
            Self.append(open.text, first: open.first, last: number + 1, to: &result)
        }
        return result
    }

    /// `strstrip()`: systemd's whitespace off both ends.
    package static func strip(_ text: Substring) -> String {
        let bytes = Array(text.utf8)
        let start = bytes.firstIndex { !Self.isWhitespace($0) } ?? bytes.count
        let end = bytes.lastIndex { !Self.isWhitespace($0) }.map { $0 + 1 } ?? start
        return String(decoding: bytes[start..<max(start, end)], as: UTF8.self)
    }

    private static func append(_ bytes: [UInt8], first: Int, last: Int, to result: inout [Line]) {
        let text = Self.strip(Substring(String(decoding: bytes, as: UTF8.self)))
        if !text.isEmpty { result.append(Line(text: text, first: first, last: last)) }
    }

    /// `read_line()`: splits at `\n`, `\r` and NUL, a run of different ones being one end.
    private static func physicalLines(_ bytes: [UInt8]) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index < bytes.count {
            guard let kind = Self.endOfLine(bytes[index]) else {
                index += 1
                continue
            }
            lines.append(bytes[start..<index])
            var seen = kind
            index += 1
            // NUL ends a run; so does an end of a kind already in it.
            while seen & 4 == 0, index < bytes.count, let next = Self.endOfLine(bytes[index]), seen & next == 0 {
                seen |= next
                index += 1
            }
            start = index
        }
        if start < bytes.count { lines.append(bytes[start...]) }
        return lines
    }

    /// `\n` 1, `\r` 2, NUL 4 (`categorize_eol()`).
    private static func endOfLine(_ byte: UInt8) -> Int? {
        switch byte {
        case 0x0A: 1
        case 0x0D: 2
        case 0x00: 4
        default: nil
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }
}
