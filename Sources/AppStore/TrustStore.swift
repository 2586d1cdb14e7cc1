import COpenSSL

/// The configured trust anchors in an `X509_STORE`, and RFC 5280 path validation against them.
final class TrustStore: @unchecked Sendable {
    private let store: OpaquePointer
    private let roots: [X509Certificate]

    init(rootsDER: [[UInt8]]) throws(VerificationSetupError) {
        guard !rootsDER.isEmpty else { throw VerificationSetupError("no trusted root certificate configured") }
        var roots: [X509Certificate] = []
        for (i, der) in rootsDER.enumerated() {
            do { roots.append(try X509Certificate(der: der)) } catch {
                throw VerificationSetupError("trusted root #\(i) is not a DER certificate: \(error.detail)")
            }
        }
        guard let store = X509_STORE_new() else { OpenSSLErrors.fatal("X509_STORE_new") }
        self.store = store
        self.roots = roots
        for root in roots {
            // X509_STORE_add_cert takes its own reference.
            _ = root.withRaw { X509_STORE_add_cert(store, $0) }
        }
        _ = OpenSSLErrors.drain()
    }

    deinit { X509_STORE_free(store) }

    /// Validates leaf → intermediate → configured root at `time` (seconds since the epoch).
    /// Not X509_STRICT, like Apple's Python library: Apple's mock chains have no AKI.
    /// Returns the validity windows of every certificate on the path.
    func validate(leaf: X509Certificate, intermediate: X509Certificate, at time: Int64)
        throws(VerificationError) -> [ClosedRange<Int64>]
    {
        guard let ctx = X509_STORE_CTX_new() else { OpenSSLErrors.fatal("X509_STORE_CTX_new") }
        defer { X509_STORE_CTX_free(ctx) }
        guard let untrusted = COpenSSL_sk_X509_new_null() else { OpenSSLErrors.fatal("sk_X509_new_null") }
        defer { COpenSSL_sk_X509_free(untrusted) }

        let outcome: Result<[ClosedRange<Int64>], VerificationError> = withExtendedLifetime((leaf, intermediate, self))
        {
            intermediate.withRaw { _ = COpenSSL_sk_X509_push(untrusted, $0) }
            let initialised = leaf.withRaw { X509_STORE_CTX_init(ctx, store, $0, untrusted) }
            guard initialised == 1 else { OpenSSLErrors.fatal("X509_STORE_CTX_init") }
            X509_VERIFY_PARAM_set_time(X509_STORE_CTX_get0_param(ctx), time_t(time))
            guard X509_verify_cert(ctx) == 1 else {
                return .failure(
                    OpenSSLErrors.chain(
                        code: X509_STORE_CTX_get_error(ctx),
                        depth: X509_STORE_CTX_get_error_depth(ctx)))
            }
            guard let chain = X509_STORE_CTX_get0_chain(ctx), COpenSSL_sk_X509_num(chain) == 3 else {
                return .failure(VerificationError(.invalidChain, "path is not leaf → intermediate → root"))
            }
            let middle = COpenSSL_sk_X509_value(chain, 1)
            let usesIntermediate = intermediate.withRaw { X509_cmp(middle, $0) == 0 }
            guard usesIntermediate else {
                return .failure(VerificationError(.invalidChain, "the x5c intermediate is not on the path"))
            }
            var windows: [ClosedRange<Int64>] = [leaf.validity, intermediate.validity]
            if let top = COpenSSL_sk_X509_value(chain, 2) {
                windows.append(X509Certificate.validity(of: top))
            }
            return .success(windows)
        }
        return try outcome.get()
    }
}
