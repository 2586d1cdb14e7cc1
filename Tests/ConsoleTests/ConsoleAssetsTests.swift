import Console
import Foundation
import HTTP
import Testing

/// The console's files are compiled in by SwiftPM's `embedInCode` rule: what the routes serve
/// must be exactly the bytes under `Sources/Console/Resources`, every file there must be served
/// (a file added but not listed in `ConsoleAssets` would silently be missing), and each with
/// the type and cache headers the browser relies on.
@Suite struct ConsoleAssetsTests {
    static let resources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/Console/Resources")

    static func router() -> Router {
        var router = Router()
        ConsoleRoutes().register(on: &router)
        return router
    }

    /// FNV-1a (64 bit), worked here again so the ETag is checked against an independent sum.
    static func fnv1a(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 1_099_511_628_211 }
        let hex = String(hash, radix: 16)
        return "\"" + String(repeating: "0", count: 16 - hex.count) + hex + "\""
    }

    @Test func everyFileOnDiskIsServedByteForByte() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.resources.path).sorted()
        #expect(names.count == 13, "10 scripts, the stylesheet, the icon and the page: \(names)")
        let router = Self.router()
        let types = [
            "js": "text/javascript; charset=utf-8", "css": "text/css; charset=utf-8",
            "svg": "image/svg+xml", "html": "text/html; charset=utf-8",
        ]
        for name in names {
            let disk = [UInt8](try Data(contentsOf: Self.resources.appendingPathComponent(name)))
            let path = name == "index.html" ? "/console" : "/console/" + name
            let response = router.handle(HTTPRequest(method: "GET", path: path))
            #expect(response.status == 200, "\(path)")
            #expect(response.body == disk, "\(path) serves the bytes of Resources/\(name)")
            #expect(response.headers["Content-Type"] == types[String(name.split(separator: ".").last!)])
            #expect(response.headers["ETag"] == Self.fnv1a(disk))
            #expect(response.headers["Cache-Control"] == "no-cache")
        }
        #expect(Set(ConsoleAssets.files.map(\.name) + ["index.html"]) == Set(names))
    }

    @Test func revalidationHeadAndUnknownNames() throws {
        let router = Self.router()
        let page = router.handle(HTTPRequest(method: "GET", path: "/console"))
        let etag = try #require(page.headers["ETag"])
        let again = router.handle(HTTPRequest(method: "GET", path: "/console", headers: ["if-none-match": etag]))
        #expect(again.status == 304 && again.body.isEmpty && again.headers["Content-Type"] == nil)
        let head = router.handle(HTTPRequest(method: "HEAD", path: "/console/app.js"))
        #expect(head.status == 200 && head.body.isEmpty)
        #expect(router.handle(HTTPRequest(method: "GET", path: "/console/index.html")).status == 404)
        #expect(router.handle(HTTPRequest(method: "GET", path: "/console/nope.js")).status == 404)
    }
}
