/// The console's static files (api.md §6): plain HTML, CSS and JavaScript modules kept as real
/// files under `Resources/`, so an editor, a linter or a browser's devtools see them as what
/// they are. SwiftPM's `embedInCode` rule (Package.swift) compiles their bytes into the binary
/// (the generated `PackageResources`), so the console works offline, needs no build step and
/// the binary runs alone, without a resource bundle beside it. The files are served byte for
/// byte, so they keep no trailing newline they did not have as Swift strings.
///
/// Nothing here is inline script or style (the Content-Security-Policy forbids both), and the
/// scripts build every node with `textContent`, never `innerHTML`, so whatever the data holds is
/// shown as text.
public enum ConsoleAssets {
    /// One file by its name under `/console/`, with the type it is served as.
    public struct File: Sendable {
        public let name: String
        public let contentType: String
        public let bytes: [UInt8]
    }

    /// The page itself (`GET /console`): the frame `app.js` fills.
    public static let indexHTML = File(
        name: "index.html", contentType: "text/html; charset=utf-8", bytes: PackageResources.index_html)

    /// Every script by its name under `/console/`; `app.js` imports the others.
    public static let scriptFiles: [File] = [
        // Sign-in, the key's lifetime, navigation and hash routing.
        script("app.js", PackageResources.app_js),
        // DOM helpers: every node is built with createElement and text nodes, so data is never
        // parsed as HTML.
        script("dom.js", PackageResources.dom_js),
        // The one way the page talks to the service: the public JSON API with the session's key.
        script("api.js", PackageResources.api_js),
        // The Customer page: lookup, `asOf`, entitlements and why, subscriptions,
        // non-consumables, balances.
        script("customer.js", PackageResources.customer_js),
        // The Customer page's history: the event timeline (paged on demand, newest first) and
        // the user's changes with the balance ledger they carry.
        script("customer-history.js", PackageResources.customer_history_js),
        // The Customer page's promotional grants: a grant form and a revoke button per grant
        // still in force, both through the admin endpoints; any refusal is shown as it came.
        script("grants.js", PackageResources.grants_js),
        // The Overview page: the analytics series of `GET /v1/admin/metrics/overview` as charts.
        script("overview.js", PackageResources.overview_js),
        // Line and grouped bar charts in SVG, each with its numbers in a table beside it (for
        // screen readers and copying).
        script("charts.js", PackageResources.charts_js),
        // The Operations page: projections and their lag, a replay dry run with its per-user
        // diff, and webhook health with dead deliveries and redelivery.
        script("operations.js", PackageResources.operations_js),
        // The Customer page's search box (api.md §7 lookups): what the pasted text names — a
        // user id, a transactionId, an originalTransactionId, an appAccountToken or the order ID
        // of an App Store e-mail receipt — and the sentence that says which matched.
        script("search.js", PackageResources.search_js),
    ]

    /// Every asset under `/console/`: the scripts, one stylesheet (readable at 1280×800 and at a
    /// phone's 390 px, visible focus, colour only repeating what the badge text says) and the icon.
    public static let files: [File] =
        scriptFiles + [
            File(name: "console.css", contentType: "text/css; charset=utf-8", bytes: PackageResources.console_css),
            File(name: "favicon.svg", contentType: "image/svg+xml", bytes: PackageResources.favicon_svg),
        ]

    /// The scripts as text, for the tests that read what the page runs.
    public static var scripts: [(name: String, source: String)] {
        scriptFiles.map { ($0.name, String(decoding: $0.bytes, as: UTF8.self)) }
    }

    private static func script(_ name: String, _ bytes: [UInt8]) -> File {
        File(name: name, contentType: "text/javascript; charset=utf-8", bytes: bytes)
    }
}
