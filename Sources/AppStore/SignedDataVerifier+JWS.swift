import Glibc
import JSON

extension SignedDataVerifier {
    /// Steps 1–8 of docs/FORMATS.md §1.2: returns the payload once its signature and chain check out.
    /// `claimedEnvironment` reads the (still unverified) payload's environment, to decide whether the
    /// payload is local-testing data that Apple's libraries accept without cryptography.
    /// `dateKey` names the payload's signing date (an app transaction's is `receiptCreationDate`).
    func verifiedPayload(
        _ jws: String, claimedEnvironment: (JSONValue) -> String?, dateKey: String = "signedDate"
    ) throws(VerificationError) -> (JSONValue, [UInt8]) {
        var jws = jws
        let result = jws.withUTF8 { bytes in
            Result { () throws(VerificationError) in
                try verifiedPayload(bytes, claimedEnvironment: claimedEnvironment, dateKey: dateKey)
            }
        }
        return try result.get()
    }

    private func verifiedPayload(
        _ bytes: UnsafeBufferPointer<UInt8>, claimedEnvironment: (JSONValue) -> String?, dateKey: String
    ) throws(VerificationError) -> (JSONValue, [UInt8]) {
        // 1. Exactly three segments.
        guard let firstDot = Self.indexOfDot(in: bytes, from: 0),
            let secondDot = Self.indexOfDot(in: bytes, from: firstDot + 1),
            Self.indexOfDot(in: bytes, from: secondDot + 1) == nil
        else {
            throw VerificationError(.malformed, "a compact JWS has exactly 3 segments")
        }
        let headerPart = UnsafeBufferPointer(rebasing: bytes[0..<firstDot])
        let payloadPart = UnsafeBufferPointer(rebasing: bytes[(firstDot + 1)..<secondDot])
        let signaturePart = UnsafeBufferPointer(rebasing: bytes[(secondDot + 1)...])

        guard let payloadBytes = Base64.decodeURL(payloadPart) else {
            throw VerificationError(.malformed, "payload is not base64url")
        }
        let payload: JSONValue
        do { payload = try JSONValue.parse(payloadBytes) } catch {
            throw VerificationError(.malformed, "payload is not JSON: \(error)")
        }
        guard payload.objectValue != nil else { throw VerificationError(.malformed, "payload is not a JSON object") }

        // Local StoreKit testing data (Xcode/LocalTesting) carries no Apple chain: Apple's libraries skip
        // the cryptography when configured for that environment. Anything else claiming it is rejected.
        if let env = claimedEnvironment(payload), AppStoreEnvironment.unsigned.contains(env) {
            guard environments.contains(env) else {
                throw VerificationError(.wrongEnvironment, "environment \(env) is not accepted")
            }
            return (payload, payloadBytes)
        }

        // 4. Effective date: the payload's signedDate, so stored facts stay verifiable after leaf expiry.
        let time: Int64
        if let signedDate = payload.millis(dateKey) {
            time = signedDate >= 0 ? signedDate / 1000 : (signedDate - 999) / 1000
        } else {
            time = Int64(Glibc.time(nil))
        }

        // 2, 3, 5, 6. Header and chain, cached by the header segment; a hit still honours `time`.
        let entry: ChainCache.Entry
        if let hit = cache.lookup(headerPart), hit.covers(time) {
            entry = hit
        } else {
            entry = try validateHeader(headerPart, at: time)
            cache.insert(entry)
        }

        // 8. ES256 signature over "header.payload" with the leaf key; the entry has already
        // absorbed "header." into its SHA-256 state.
        guard let signature = Base64.decodeURL(signaturePart) else {
            throw VerificationError(.malformed, "signature is not base64url")
        }
        try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { digest throws(VerificationError) in
            entry.headerDigest.digest(appending: payloadPart, into: digest.baseAddress!)
            try signature.withUnsafeBufferPointer { sig throws(VerificationError) in
                try entry.leafKey.verifyES256(rawSignature: sig, digest: UnsafeBufferPointer(digest))
            }
        }
        return (payload, payloadBytes)
    }

    private static func indexOfDot(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard start < bytes.count, let base = bytes.baseAddress,
            let hit = memchr(base + start, Int32(UInt8(ascii: ".")), bytes.count - start)
        else { return nil }
        return UnsafeRawPointer(hit) - UnsafeRawPointer(base)
    }

    /// Header checks (alg ES256, x5c of 3), then the chain at `time` and Apple's OIDs.
    private func validateHeader(_ headerPart: UnsafeBufferPointer<UInt8>, at time: Int64)
        throws(VerificationError) -> ChainCache.Entry
    {
        guard let headerBytes = Base64.decodeURL(headerPart) else {
            throw VerificationError(.malformed, "header is not base64url")
        }
        let header: JSONValue
        do { header = try JSONValue.parse(headerBytes) } catch {
            throw VerificationError(.malformed, "header is not JSON: \(error)")
        }
        guard header.objectValue != nil else { throw VerificationError(.malformed, "header is not a JSON object") }
        guard let alg = header["alg"]?.stringValue else {
            throw VerificationError(.unsupportedAlgorithm, "header has no alg")
        }
        guard alg == "ES256" else { throw VerificationError(.unsupportedAlgorithm, "alg \(alg) is not ES256") }
        guard let x5cValues = header["x5c"]?.arrayValue else {
            throw VerificationError(.malformed, "header has no x5c certificate chain")
        }
        let x5c = x5cValues.compactMap(\.stringValue)
        guard x5c.count == x5cValues.count else { throw VerificationError(.malformed, "x5c entries must be strings") }
        guard x5c.count == 3 else {
            throw VerificationError(.invalidChain, "x5c must hold 3 certificates, found \(x5c.count)")
        }
        // x5c[2] is ignored: the anchor is one of the configured roots.
        return try validateChain(leaf: x5c[0], intermediate: x5c[1], at: time, header: headerPart)
    }

    private func validateChain(
        leaf leafText: String, intermediate intermediateText: String, at time: Int64,
        header headerPart: UnsafeBufferPointer<UInt8>
    )
        throws(VerificationError) -> ChainCache.Entry
    {
        guard let leafDER = Base64.decodeStandard(leafText) else {
            throw VerificationError(.invalidCertificate, "x5c leaf is not base64")
        }
        guard let intermediateDER = Base64.decodeStandard(intermediateText) else {
            throw VerificationError(.invalidCertificate, "x5c intermediate is not base64")
        }
        let leaf = try X509Certificate(der: leafDER)
        let intermediate = try X509Certificate(der: intermediateDER)
        let windows = try trust.validate(leaf: leaf, intermediate: intermediate, at: time)
        guard intermediate.hasExtension(intermediateOIDObject) else {
            throw VerificationError(.invalidCertificate, "intermediate lacks Apple WWDR OID 1.2.840.113635.100.6.2.1")
        }
        guard leaf.hasExtension(leafOIDObject) else {
            throw VerificationError(
                .invalidCertificate, "leaf lacks Apple receipt-signing OID 1.2.840.113635.100.6.11.1")
        }
        let key = try leaf.publicKey()
        guard key.isP256 else { throw VerificationError(.invalidCertificate, "leaf key is not P-256") }
        return ChainCache.Entry(leafKey: key, windows: windows, header: headerPart)
    }
}
