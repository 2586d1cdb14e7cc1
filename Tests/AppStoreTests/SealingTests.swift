import Testing

@testable import AppStore

/// AES-256-GCM as the erasure design uses it (docs/architecture.md): the known answer of the
/// GCM specification's test case 16 (AES-256, 96-bit IV, with associated data; checked against
/// another implementation), and every way a sealed value must refuse to open.
@Suite struct SealingTests {
    static func bytes(_ hex: String) -> [UInt8] {
        var out: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            out.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return out
    }

    let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
    let plaintext = bytes(
        "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
    )
    let associated = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
    let nonce = bytes("cafebabefacedbaddecaf888")

    @Test func theSpecificationsTestCase16() throws {
        let sealed = try Sealing.seal(plaintext, key: key, nonce: nonce, associatedData: associated)
        #expect(Array(sealed[0..<12]) == nonce)
        #expect(
            Array(sealed[12..<(sealed.count - 16)])
                == Self.bytes(
                    "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                ))
        #expect(Array(sealed.suffix(16)) == Self.bytes("76fc6ece0f4e1768cddf8853bb2d551b"))
        #expect(try Sealing.open(sealed, key: key, associatedData: associated) == plaintext)
    }

    @Test func aFreshNonceEachTimeAndTheEmptyValueToo() throws {
        let key = Sealing.newKey()
        #expect(key.count == 32)
        let a = try Sealing.seal(Array("u-1".utf8), key: key)
        let b = try Sealing.seal(Array("u-1".utf8), key: key)
        #expect(a != b, "random nonces: the same value never seals to the same bytes")
        #expect(try Sealing.open(a, key: key) == Array("u-1".utf8))
        #expect(try Sealing.open(try Sealing.seal([], key: key), key: key) == [])
    }

    @Test func anotherKeyAnotherPlaceOrOneFlippedBitDoesNotOpen() throws {
        let sealed = try Sealing.seal(plaintext, key: key, associatedData: associated)
        #expect(throws: Sealing.Failure.notAuthentic) {
            try Sealing.open(sealed, key: Sealing.newKey(), associatedData: associated)
        }
        #expect(throws: Sealing.Failure.notAuthentic) { try Sealing.open(sealed, key: key, associatedData: [1]) }
        for position in [0, 12, sealed.count - 1] {
            var flipped = sealed
            flipped[position] ^= 0x01
            #expect(throws: Sealing.Failure.notAuthentic) {
                try Sealing.open(flipped, key: key, associatedData: associated)
            }
        }
        #expect(throws: Sealing.Failure.notAuthentic) { try Sealing.open(Array(sealed.prefix(27)), key: key) }
        #expect(throws: Sealing.Failure.badKey) { try Sealing.seal([1], key: [1, 2, 3]) }
    }
}
