extension Duration {
    /// A short human form for the table: `"200 µs"`, `"1 ms"`.
    var formatted: String {
        let nanoseconds = self.components.seconds * 1_000_000_000 + self.components.attoseconds / 1_000_000_000
        if nanoseconds % 1_000_000 == 0 { return "\(nanoseconds / 1_000_000) ms" }
        if nanoseconds % 1_000 == 0 { return "\(nanoseconds / 1_000) µs" }
        return "\(nanoseconds) ns"
    }
}
