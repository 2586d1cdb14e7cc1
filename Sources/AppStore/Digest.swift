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
        return Hex.encode(out)
    }
}
