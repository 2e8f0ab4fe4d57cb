import Glibc
import PreciseTimerCore

/// `FixedRandomDelay=`: the delay systemd's system manager derives for a unit, stable for the
/// (machine, unit) pair: SipHash-2-4, under systemd's key, of the machine ID, the manager flag
/// (system), the user ID (0) and the unit's name, taken modulo `RandomizedDelaySec=` in
/// microseconds (systemd 252's `timer_get_fixed_delay_hash()` and `add_random()`, read from its
/// source, not compared with a running systemd). Never Swift's `Hasher`, which is seeded per
/// process.
package enum FixedRandomDelay {
    /// systemd's `hash_key` in `src/core/timer.c`.
    private static let key: [UInt8] = [
        0x51, 0x0a, 0xdb, 0x76, 0x29, 0x51, 0x42, 0xc2, 0x80, 0x35, 0xea, 0xe6, 0x8e, 0x3a, 0x37, 0xbd,
    ]

    /// The delay for `unit` on the machine `machineID` (16 bytes; all zeros when there is none,
    /// as systemd uses `SD_ID128_NULL` then), at most `maximum` (exclusive, as systemd's modulo).
    package static func delay(machineID: [UInt8], unit: TimerID, maximum: Duration) -> Duration {
        let microseconds = maximum.components.seconds &* 1_000_000 + maximum.components.attoseconds / 1_000_000_000_000
        guard microseconds > 0 else { return .zero }
        var message = machineID.count == 16 ? machineID : [UInt8](repeating: 0, count: 16)
        // siphash24_compress_boolean(MANAGER_IS_SYSTEM(…)), a system manager: systemd 252 hashes a
        // bool as an `int` (later versions as one byte).
        message += [1, 0, 0, 0]
        message += [0, 0, 0, 0]  // uid_t 0, little-endian.
        message += Array(unit.description.utf8)
        let hash = SipHash24(key: Self.key).hash(message)
        return .microseconds(Int64(hash % UInt64(microseconds)))
    }

    /// The machine ID in `/etc/machine-id` (32 hexadecimal digits), as 16 bytes; all zeros when
    /// it cannot be read or parsed, as systemd proceeds with `SD_ID128_NULL`.
    static func machineID(path: String = "/etc/machine-id") -> [UInt8] {
        guard let file = fopen(path, "r") else { return Self.nullID }
        defer { fclose(file) }
        var buffer = [CChar](repeating: 0, count: 64)
        guard fgets(&buffer, Int32(buffer.count), file) != nil else { return Self.nullID }
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return Self.parse(text) ?? Self.nullID
    }

    /// 32 hexadecimal digits (surrounding whitespace allowed) as 16 bytes; `nil` otherwise.
    package static func parse(_ text: String) -> [UInt8]? {
        let digits = Array(text.trimmingWhitespace.utf8)
        guard digits.count == 32 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: 32, by: 2) {
            guard let high = Self.nibble(digits[index]), let low = Self.nibble(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }

    package static let nullID = [UInt8](repeating: 0, count: 16)

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): c - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension String {
    fileprivate var trimmingWhitespace: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }
        guard let first = self.firstIndex(where: { !isSpace($0) }), let last = self.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return self[first...last]
    }
}
