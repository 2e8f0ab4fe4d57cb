extension Duration {
    /// A short reading for the summary line: "2.04 s", "31.2 ms", "655 ns".
    var summary: String {
        let (seconds, attoseconds) = self.components
        let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
        func rounded(_ value: Double, _ unit: String) -> String {
            let digits = value >= 100 ? 0 : value >= 10 ? 1 : 2
            var scaled = value
            for _ in 0..<digits { scaled *= 10 }
            var text = String(Int64(scaled.rounded()))
            if digits > 0 {
                while text.count <= digits { text = "0" + text }
                text.insert(".", at: text.index(text.endIndex, offsetBy: -digits))
            }
            return "\(text) \(unit)"
        }
        switch abs(nanoseconds) {
        case 1e9...: return rounded(nanoseconds / 1e9, "s")
        case 1e6...: return rounded(nanoseconds / 1e6, "ms")
        case 1e3...: return rounded(nanoseconds / 1e3, "µs")
        default: return rounded(nanoseconds, "ns")
        }
    }
}
