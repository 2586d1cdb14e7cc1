import COpenSSL

/// SHA-256 for the other targets (COpenSSL is this target's alone): the hash of a recorded
/// catalog version.
public enum Digest {
    /// Lower-case hex SHA-256 of `bytes`, through OpenSSL's EVP interface.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = bytes.withUnsafeBufferPointer { input in
            out.withUnsafeMutableBufferPointer { output in
                EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil) == 1
            }
        }
        guard ok, length == 32 else { OpenSSLErrors.fatal("SHA-256") }
        let digits = Array("0123456789abcdef".utf8)
        var hex: [UInt8] = []
        hex.reserveCapacity(64)
        for byte in out {
            hex.append(digits[Int(byte >> 4)])
            hex.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: hex, as: UTF8.self)
    }
}
