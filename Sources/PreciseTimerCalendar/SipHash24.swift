/// SipHash-2-4 (Aumasson and Bernstein), 64-bit output, as systemd's `siphash24`.
package struct SipHash24 {
    private let k0: UInt64
    private let k1: UInt64

    package init(key: [UInt8]) {
        precondition(key.count == 16)
        self.k0 = Self.load(key, 0)
        self.k1 = Self.load(key, 8)
    }

    package func hash(_ message: [UInt8]) -> UInt64 {
        var v0: UInt64 = 0x736f_6d65_7073_6575 ^ self.k0
        var v1: UInt64 = 0x646f_7261_6e64_6f6d ^ self.k1
        var v2: UInt64 = 0x6c79_6765_6e65_7261 ^ self.k0
        var v3: UInt64 = 0x7465_6462_7974_6573 ^ self.k1
        func round() {
            v0 &+= v1
            v1 = v1.rotatedLeft(13) ^ v0
            v0 = v0.rotatedLeft(32)
            v2 &+= v3
            v3 = v3.rotatedLeft(16) ^ v2
            v0 &+= v3
            v3 = v3.rotatedLeft(21) ^ v0
            v2 &+= v1
            v1 = v1.rotatedLeft(17) ^ v2
            v2 = v2.rotatedLeft(32)
        }
        let whole = message.count / 8 * 8
        for offset in stride(from: 0, to: whole, by: 8) {
            let m = Self.load(message, offset)
            v3 ^= m
            round()
            round()
            v0 ^= m
        }
        var last = UInt64(truncatingIfNeeded: message.count) << 56
        for (shift, byte) in message[whole...].enumerated() {
            last |= UInt64(byte) << (8 * UInt64(shift))
        }
        v3 ^= last
        round()
        round()
        v0 ^= last
        v2 ^= 0xff
        for _ in 0..<4 { round() }
        return v0 ^ v1 ^ v2 ^ v3
    }

    /// Eight bytes at `offset`, little-endian.
    private static func load(_ bytes: [UInt8], _ offset: Int) -> UInt64 {
        (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[offset + $1]) << (8 * UInt64($1)) }
    }
}

extension UInt64 {
    fileprivate func rotatedLeft(_ count: UInt64) -> UInt64 {
        self << count | self >> (64 - count)
    }
}
