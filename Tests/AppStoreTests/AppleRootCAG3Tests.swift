import Foundation
import Testing

@testable import AppStore

@Suite struct AppleRootCAG3Tests {
    @Test func embeddedBytesEqualCertsFile() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("certs/AppleRootCA-G3.der")
        #expect(AppleRoots.g3DER == Array(try Data(contentsOf: file)))
        _ = try X509Certificate(der: AppleRoots.g3DER)
    }
}
