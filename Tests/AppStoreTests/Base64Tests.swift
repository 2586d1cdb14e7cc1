import Foundation
import Testing

@testable import AppStore

/// The strict decoders on the JWS hot path: round trips at every length and alignment, and the
/// inputs they must refuse.
@Suite struct Base64Tests {
    func standard(_ text: String) -> [UInt8]? { Base64.decodeStandard(text) }
    func url(_ text: String) -> [UInt8]? { Base64.decodeURL(Substring(text)) }

    @Test func roundTripsEveryLengthInBothAlphabets() {
        var generator = SystemRandomNumberGenerator()
        for length in 0..<100 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(url(Base64.encode(bytes, url: true)) == bytes)
            #expect(standard(Base64.encode(bytes, url: false)) == bytes)
        }
        let all = Array(0...255).map(UInt8.init)
        #expect(url(Base64.encode(all, url: true)) == all)
        #expect(standard(Base64.encode(all, url: false)) == all)
    }

    /// RFC 4648 §10's vectors, padded in the standard alphabet and unpadded in the URL one, and
    /// Foundation's encoder at every length (the round trips above cannot see a wrong padding:
    /// the standard decoder accepts none).
    @Test func encodesAsRFC4648AndFoundationDo() {
        let vectors = [
            ("", ""), ("f", "Zg=="), ("fo", "Zm8="), ("foo", "Zm9v"), ("foob", "Zm9vYg=="), ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ]
        for (plain, encoded) in vectors {
            #expect(Base64.encode(Array(plain.utf8), url: false) == encoded)
            #expect(Base64.encode(Array(plain.utf8), url: true) == encoded.replacingOccurrences(of: "=", with: ""))
        }
        #expect(Base64.encode([0xFB, 0xFF, 0xBF], url: false) == "+/+/")
        #expect(Base64.encode([0xFB, 0xFF, 0xBF], url: true) == "-_-_")
        var generator = SystemRandomNumberGenerator()
        for length in 0..<70 {
            let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
            #expect(Base64.encode(bytes, url: false) == Data(bytes).base64EncodedString())
        }
    }

    @Test func acceptsStandardWithOrWithoutPadding() {
        #expect(standard("QQ==") == [0x41])
        #expect(standard("QQ") == [0x41])
        #expect(standard("QUI=") == [0x41, 0x42])
        #expect(standard("+/+/") == [0xFB, 0xFF, 0xBF])
        #expect(url("-_-_") == [0xFB, 0xFF, 0xBF])
    }

    @Test(arguments: ["Q", "QUJDR", "QR", "QUJ", "QQ=", "Q===", "QQ=A", "A=AA", "ab cd", "QUJD\n", "QUJD!"])
    func refusesMalformedStandard(text: String) {
        #expect(standard(text) == nil)
    }

    @Test(arguments: ["Q", "QR", "QUJ", "QQ==", "+/+/", "QU=D", "ab.c", "QUJDé"])
    func refusesMalformedURL(text: String) {
        #expect(url(text) == nil)
    }
}
