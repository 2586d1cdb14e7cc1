import HTTP

/// `GET /console` and its assets (api.md §6): a static page compiled into the binary, served
/// without a key. The page asks for an API key itself and calls the public API with it, so
/// these routes hand out nothing but code. They need the HTTP target's router and nothing of
/// Service, so the console stands alone and Service only mounts it.
public struct ConsoleRoutes: Sendable {
    /// No inline script or style anywhere, nothing from another origin, never framed: a value
    /// the page shows can at worst be text, and a stolen page cannot be embedded.
    static let contentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    /// One asset ready to serve: its bytes, its type and an ETag computed once at start-up.
    struct Asset: Sendable {
        let contentType: String
        let body: [UInt8]
        let etag: String

        init(_ file: ConsoleAssets.File) {
            self.contentType = file.contentType
            self.body = file.bytes
            self.etag = "\"" + Self.fingerprint(body) + "\""
        }

        /// FNV-1a (64 bit) of the bytes: an ETag only has to change when the bytes do, it is no
        /// security boundary, so a hash by hand is fine here (no crypto involved).
        static func fingerprint(_ bytes: [UInt8]) -> String {
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in bytes {
                hash ^= UInt64(byte)
                hash = hash &* 0x0000_0100_0000_01b3
            }
            let hex = String(hash, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }
    }

    /// The page itself, and every asset by the name it has under `/console/`.
    static let page = Asset(ConsoleAssets.indexHTML)
    static let assets: [String: Asset] = Dictionary(
        uniqueKeysWithValues: ConsoleAssets.files.map { ($0.name, Asset($0)) })

    public init() {}

    public func register(on router: inout Router) {
        router.add("GET", "/console", inline: true) { request, _ in Self.serve(Self.page, request) }
        router.add("GET", "/console/{asset}", inline: true) { request, parameters in
            guard let name = parameters["asset"], let asset = Self.assets[name] else {
                return .problem(
                    status: 404, code: "not_found", title: "Not Found",
                    detail:
                        "The console has no asset \(parameters["asset"] ?? "") (known: \(Self.assets.keys.sorted().joined(separator: ", ")))."
                )
            }
            return Self.serve(asset, request)
        }
    }

    /// The asset with its security and cache headers; 304 when the browser already holds it.
    static func serve(_ asset: Asset, _ request: HTTPRequest) -> HTTPResponse {
        var headers = [
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            // Revalidated on every load (cheap with the ETag), so a new binary's console is in use at once.
            "Cache-Control": "no-cache",
            "ETag": asset.etag,
        ]
        if let match = request.header("If-None-Match"),
            match.split(separator: ",").contains(where: { $0.trimmingCharacters(in: " ") == asset.etag })
        {
            return HTTPResponse(status: 304, headers: headers)
        }
        headers["Content-Type"] = asset.contentType
        return HTTPResponse(status: 200, headers: headers, body: request.method == "HEAD" ? [] : asset.body)
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: Character) -> Substring {
        var s = self
        while s.first == set { s = s.dropFirst() }
        while s.last == set { s = s.dropLast() }
        return s
    }
}
