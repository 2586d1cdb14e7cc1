import COpenSSL

/// AES-256-GCM through OpenSSL's EVP interface, for the crypto-shredding of personal data
/// (docs/architecture.md, "Erasure on an append-only log"): what is sealed with a person's key
/// is unreadable for good once that key is destroyed. A sealed value is `nonce (12 bytes) ‖
/// ciphertext ‖ tag (16 bytes)`; the nonce is random per seal (a key seals few values: a
/// person's ids and payloads, far below GCM's 2³² random-nonce bound). `associatedData` binds
/// a sealed value to where it belongs (an event's type and stream): moved elsewhere, it does
/// not open.
public enum Sealing {
    public static let keyLength = 32
    static let nonceLength = 12
    static let tagLength = 16

    /// Why a value could not be sealed or opened.
    public enum Failure: Error, Sendable, Equatable {
        /// The key is not 32 bytes.
        case badKey
        /// Too short, or its tag does not match: forged, moved, or sealed with another key.
        case notAuthentic
    }

    /// A fresh random 256-bit key (OpenSSL's CSPRNG).
    public static func newKey() -> [UInt8] { randomBytes(keyLength) }

    /// Seals `plaintext` under `key`, bound to `associatedData`.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(Failure) -> [UInt8]
    {
        try seal(plaintext, key: key, nonce: randomBytes(nonceLength), associatedData: associatedData)
    }

    /// `seal` with a given nonce: for known-answer tests only (a nonce must never repeat under a key).
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]) throws(Failure)
        -> [UInt8]
    {
        guard key.count == keyLength else { throw .badKey }
        precondition(nonce.count == nonceLength, "GCM nonces here are 96 bits")
        guard let context = EVP_CIPHER_CTX_new() else { OpenSSLErrors.fatal("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        var out = nonce + [UInt8](repeating: 0, count: plaintext.count + tagLength)
        var length: Int32 = 0
        var ok = EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1
        if ok, !associatedData.isEmpty {
            ok = EVP_EncryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) == 1
        }
        out.withUnsafeMutableBufferPointer { buffer in
            let body = buffer.baseAddress! + nonceLength
            if ok, !plaintext.isEmpty {
                ok = EVP_EncryptUpdate(context, body, &length, plaintext, Int32(plaintext.count)) == 1
            }
            if ok { ok = EVP_EncryptFinal_ex(context, body + plaintext.count, &length) == 1 }
            if ok {
                ok =
                    EVP_CIPHER_CTX_ctrl(
                        context, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), body + plaintext.count) == 1
            }
        }
        guard ok else { OpenSSLErrors.fatal("AES-256-GCM seal") }
        return out
    }

    /// Opens what `seal` sealed under `key` and `associatedData`; anything else is `notAuthentic`.
    public static func open(_ sealed: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(Failure) -> [UInt8] {
        guard key.count == keyLength else { throw .badKey }
        guard sealed.count >= nonceLength + tagLength else { throw .notAuthentic }
        guard let context = EVP_CIPHER_CTX_new() else { OpenSSLErrors.fatal("EVP_CIPHER_CTX_new") }
        defer { EVP_CIPHER_CTX_free(context) }
        let nonce = Array(sealed[0..<nonceLength])
        let body = Array(sealed[nonceLength..<(sealed.count - tagLength)])
        var tag = Array(sealed[(sealed.count - tagLength)...])
        var out = [UInt8](repeating: 0, count: body.count + 1)
        var length: Int32 = 0
        guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, key, nonce) == 1 else {
            OpenSSLErrors.fatal("AES-256-GCM open")
        }
        if !associatedData.isEmpty,
            EVP_DecryptUpdate(context, nil, &length, associatedData, Int32(associatedData.count)) != 1
        {
            throw .notAuthentic
        }
        if !body.isEmpty, EVP_DecryptUpdate(context, &out, &length, body, Int32(body.count)) != 1 {
            throw .notAuthentic
        }
        guard EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            OpenSSLErrors.fatal("AES-256-GCM tag")
        }
        var final: Int32 = 0
        let authentic = out.withUnsafeMutableBufferPointer { buffer in
            EVP_DecryptFinal_ex(context, buffer.baseAddress! + body.count, &final) == 1
        }
        guard authentic else { throw .notAuthentic }
        return Array(out[0..<body.count])
    }

    /// `seal` as text (standard base64), for a JSON field.
    public static func sealText(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8]) throws(Failure) -> String {
        Base64.encode(try seal(plaintext, key: key, associatedData: associatedData), url: false)
    }

    /// Opens what `sealText` sealed; text that is not base64 is `notAuthentic`.
    public static func openText(_ sealed: String, key: [UInt8], associatedData: [UInt8]) throws(Failure) -> [UInt8] {
        guard let bytes = Base64.decodeStandard(sealed) else { throw .notAuthentic }
        return try open(bytes, key: key, associatedData: associatedData)
    }

    /// `count` random bytes from OpenSSL's CSPRNG (keys, and the opaque ids they go with).
    public static func randomBytes(_ count: Int) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { OpenSSLErrors.fatal("RAND_bytes") }
        return bytes
    }
}
