import Foundation
import Testing

/// The documents' Swift examples and their compiled copies in `DocumentationExamples.swift` must
/// not drift apart: every ```swift block of README.md and of the DocC articles has an identical
/// copy there (indentation and blank lines aside), and each module it imports is imported there
/// or stubbed.
@Suite struct DocumentationDriftTests {
    /// Modules an example imports that the tests do not build; `DocumentationStubs.swift` stands in.
    static let stubbedModules: Set<String> = ["Prometheus"]

    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    struct Example: CustomStringConvertible {
        let document: String
        let line: Int
        let lines: [String]
        var description: String { "\(self.document):\(self.line)" }
    }

    /// The DocC catalogs whose articles hold Swift examples.
    static let catalogs = [
        "Sources/PreciseTimer/PreciseTimer.docc", "Sources/PreciseTimerCalendar/PreciseTimerCalendar.docc",
    ]

    static func documents() throws -> [String] {
        let articles = try Self.catalogs.flatMap { catalog in
            try FileManager.default.contentsOfDirectory(
                atPath: Self.packageRoot.appendingPathComponent(catalog).path
            )
            .filter { $0.hasSuffix(".md") }.sorted().map { "\(catalog)/\($0)" }
        }
        return ["README.md"] + articles
    }

    static func read(_ path: String) throws -> String {
        try String(contentsOf: Self.packageRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// The ```swift blocks of a Markdown document, each with the line its fence is on.
    static func examples(in document: String) throws -> [Example] {
        var examples: [Example] = []
        var current: (line: Int, lines: [String])?
        for (index, line) in try Self.read(document).split(separator: "\n", omittingEmptySubsequences: false)
            .enumerated()
        {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if var block = current {
                if trimmed == "```" {
                    examples.append(Example(document: document, line: block.line, lines: block.lines))
                    current = nil
                } else {
                    block.lines.append(String(line))
                    current = block
                }
            } else if trimmed == "```swift" {
                current = (index + 1, [])
            }
        }
        return examples
    }

    /// Lines without their indentation, blank ones dropped.
    static func normalized(_ lines: [String]) -> [String] {
        lines.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func contains(_ haystack: [String], _ needle: [String]) -> Bool {
        guard !needle.isEmpty, needle.count <= haystack.count else { return needle.isEmpty }
        return (0...(haystack.count - needle.count)).contains { start in
            haystack[start..<(start + needle.count)].elementsEqual(needle)
        }
    }

    static let allExamples: [Example] = {
        do {
            return try Self.documents().flatMap { try Self.examples(in: $0) }
        } catch {
            Issue.record("reading the documents: \(error)")
            return []
        }
    }()

    @Test func theDocumentsHaveExamples() throws {
        // A guard against an extraction that silently finds nothing.
        #expect(Self.allExamples.count >= 20)
        #expect(Self.allExamples.contains { $0.document == "README.md" })
    }

    @Test(arguments: DocumentationDriftTests.allExamples)
    func everyExampleIsCompiled(_ example: Example) throws {
        let compiled = Self.normalized(
            try Self.read("Tests/DocumentationTests/DocumentationExamples.swift").components(separatedBy: "\n"))
        let lines = Self.normalized(example.lines)
        let imports = lines.filter { $0.hasPrefix("import ") }
        for line in imports {
            let module = String(line.split(separator: " ")[1])
            let available = compiled.contains("import \(module)") || Self.stubbedModules.contains(module)
            #expect(available, "\(example): `import \(module)` is neither in DocumentationExamples.swift nor stubbed")
        }
        let copied = Self.contains(compiled, lines.filter { !$0.hasPrefix("import ") })
        #expect(copied, "\(example): no identical copy in Tests/DocumentationTests/DocumentationExamples.swift")
    }
}
