import COpenSSL

/// The one place where OpenSSL failures become `VerificationError`s.
package enum OpenSSLErrors {
    /// Drains OpenSSL's thread-local error queue into one line (and leaves it empty for the next call).
    package static func drain() -> String {
        var parts: [String] = []
        while true {
            let code = ERR_get_error()
            if code == 0 { break }
            var buf = [CChar](repeating: 0, count: 256)
            ERR_error_string_n(code, &buf, buf.count)
            parts.append(buf.withUnsafeBufferPointer { String(cString: $0.baseAddress!) })
        }
        return parts.isEmpty ? "no OpenSSL detail" : parts.joined(separator: "; ")
    }

    static func certificate(_ what: String) -> VerificationError {
        VerificationError(.invalidCertificate, "\(what): \(drain())")
    }

    /// `X509_verify_cert` failed with `code` (an `X509_V_ERR_*`).
    static func chain(code: Int32, depth: Int32) -> VerificationError {
        _ = drain()
        let text = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "error \(code)"
        let which = depth == 0 ? "leaf" : depth == 1 ? "intermediate" : "certificate at depth \(depth)"
        return VerificationError(.invalidChain, "\(text) (\(which))")
    }

    static func signature(_ what: String) -> VerificationError {
        VerificationError(.signatureMismatch, "\(what): \(drain())")
    }

    /// An OpenSSL call that cannot fail on valid input (allocation) failed: a programmer or OOM error.
    package static func fatal(_ what: String) -> Never {
        preconditionFailure("OpenSSL \(what) failed: \(drain())")
    }
}
