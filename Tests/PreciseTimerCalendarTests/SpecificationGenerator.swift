import PreciseTimerTesting

/// Calendar specifications drawn at random from the grammar (weekdays, dates, times with lists,
/// ranges, repetitions, `~`, fractional seconds, zones and abbreviations), some out of range:
/// deterministic for a seed (SplitMix64), so a failure replays.
struct SpecificationGenerator {
    private var random: SplitMix

    init(seed: UInt64) {
        self.random = SplitMix(seed: seed)
    }

    private mutating func int(_ range: ClosedRange<Int>) -> Int {
        self.random.int(range)
    }

    private mutating func chance(_ percent: Int) -> Bool { self.int(0...99) < percent }

    private mutating func value(_ range: ClosedRange<Int>, seconds: Bool) -> String {
        var text = String(self.int(range))
        if seconds && self.chance(20) { text += "." + String(self.int(0...999_999)) }
        return text
    }

    private mutating func component(_ range: ClosedRange<Int>, seconds: Bool = false) -> String {
        if self.chance(20) { return "*" + (self.chance(30) ? "/\(self.int(1...5))" : "") }
        var parts: [String] = []
        for _ in 0..<self.int(1...3) {
            var part = self.value(range, seconds: seconds)
            if self.chance(40) { part += ".." + self.value(range, seconds: seconds) }
            if self.chance(30) { part += "/" + self.value(1...10, seconds: seconds) }
            parts.append(part)
        }
        return parts.joined(separator: ",")
    }

    mutating func next() -> String {
        let days = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]
        var text = ""
        if self.chance(30) {
            let first = self.int(0...6)
            text += days[first] + (self.chance(50) ? ".." + days[self.int(first...6)] : "") + " "
        }
        if self.chance(60) {
            let year = self.chance(30) ? self.component(2025...2040) + "-" : ""
            text += year + self.component(1...12) + (self.chance(15) ? "~" : "-") + self.component(1...31) + " "
        }
        text += self.component(0...23) + ":" + self.component(0...59)
        if self.chance(60) { text += ":" + self.component(0...59, seconds: true) }
        let zones = ["", "", "", " UTC", " Europe/Berlin", " Asia/Kathmandu", " CET", " CEST", " right/UTC"]
        return text + zones[self.int(0...zones.count - 1)]
    }
}
