/// OpenSSL's `i2d_*` convention, once: a first call with no buffer answers the length, a second
/// writes that many bytes and moves the cursor. `encode` is the `i2d_*` call for one object.
package enum DEREncoding {
    /// The DER bytes, or nil when OpenSSL cannot encode the object (length ≤ 0).
    package static func bytes(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) -> [UInt8]? {
        let length = encode(nil)
        guard length > 0 else { return nil }
        var out = [UInt8](repeating: 0, count: Int(length))
        out.withUnsafeMutableBufferPointer { buffer in
            var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
            _ = encode(&cursor)
        }
        return out
    }
}
