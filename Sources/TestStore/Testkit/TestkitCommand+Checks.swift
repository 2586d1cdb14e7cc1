import AppStore
import Arguments
import Foundation
import JSON

/// What the subcommands share: argument checks, where to post, and the delivery.
extension TestkitCommand {
    static func validUser(_ text: String) throws(CommandLineArguments.UsageError) -> String {
        guard !text.isEmpty, text.utf8.count <= 256,
            !text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) })
        else { throw usageError("--user must be 1–256 bytes without control characters") }
        return text
    }

    static func validProduct(_ productId: String) throws(CommandLineArguments.UsageError) -> String {
        guard !productId.isEmpty, productId.utf8.count <= 256,
            !productId.unicodeScalars.contains(where: {
                $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F
            })
        else { throw usageError("--product must be a product id (no spaces, at most 256 bytes), got \"\(productId)\"") }
        return productId
    }

    static func transactionId(_ text: String, flag: String) throws(CommandLineArguments.UsageError) -> String {
        guard !text.isEmpty, text.count <= 32, text.allSatisfy({ $0.isASCII && $0.isNumber }) else {
            throw usageError("--\(flag) must be a transaction id (digits), got \"\(text)\"")
        }
        return text
    }

    static func expiry(_ text: String) throws(CommandLineArguments.UsageError) -> TestkitExpiry {
        guard let parsed = TestkitExpiry.parse(text) else {
            throw usageError(
                "--expires must be an RFC 3339 time (2026-12-31T10:00:00Z) or an ISO 8601 duration (P1M, P7D, PT5M), got \"\(text)\""
            )
        }
        return parsed
    }

    /// `--percentage`: Apple's `revocationPercentage`, milliunits of a whole refund (50000 = 50 %).
    static func refundPercentage(_ text: String) throws(CommandLineArguments.UsageError) -> Int64 {
        guard let value = Int64(text), (1...100_000).contains(value) else {
            throw usageError(
                "--percentage must be an integer 1…100000 (milliunits: 50000 refunds 50 %), got \"\(text)\"")
        }
        return value
    }

    /// `--url` (or IAP_LEDGER_URL, else serve's default) + `path`; nil with `--print` (or
    /// `notPosting`, the switch that keeps it from the service).
    static func destination(
        _ parsed: CommandLineArguments, path: String, printOnly: Bool, notPosting: String = "--print"
    ) throws -> URL? {
        if printOnly {
            if let flag = ["url", "key"].first(where: { parsed.options[$0] != nil }) {
                throw usageError("--\(flag) has no use with \(notPosting) (nothing is posted)")
            }
            return nil
        }
        let source = parsed.options["url"] != nil ? "--url" : "IAP_LEDGER_URL"
        var text =
            parsed.options["url"] ?? TestkitCommand.environment("IAP_LEDGER_URL") ?? "http://127.0.0.1:8080"
        while text.hasSuffix("/") { text.removeLast() }
        guard let url = URL(string: text + path), let scheme = url.scheme, ["http", "https"].contains(scheme),
            url.host?.isEmpty == false, url.query == nil
        else { throw usageError("\(source) must be the service's http(s) URL (as serve prints it), got \"\(text)\"") }
        return url
    }

    static func apiKey(_ parsed: CommandLineArguments) throws -> String {
        guard let key = parsed.options["key"] ?? TestkitCommand.environment("IAP_LEDGER_KEY") else {
            throw usageError("posting a purchase needs an API key with the write scope: --key or IAP_LEDGER_KEY")
        }
        guard !key.isEmpty, key.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline }) else {
            throw usageError("the API key must be printable ASCII without spaces")
        }
        return key
    }

    /// `--apple-only` (kept by `testkit apple`, never posted), refused beside `--print`.
    static func appleOnly(_ parsed: CommandLineArguments) throws(CommandLineArguments.UsageError) -> Bool {
        let appleOnly = parsed.switches.contains("apple-only")
        if appleOnly && parsed.switches.contains("print") {
            throw usageError(
                "--apple-only and --print do not go together (--apple-only keeps it for testkit apple, --print prints it)"
            )
        }
        return appleOnly
    }

    /// Posts and prints the service's answer; a failure is one line saying what was minted (it
    /// stays in the state: the chain goes on) and what went wrong.
    static func deliver(_ body: [UInt8], to url: URL, key: String?, minted: String) throws(TestkitError) {
        let answer: TestkitPoster.Answer
        do { answer = try TestkitPoster.post(body, to: url, key: key) } catch {
            throw TestkitError("\(minted), but \(error.description)")
        }
        print(answer.body)
        guard (200..<300).contains(answer.status) else {
            throw TestkitError("\(minted), but the service answered HTTP \(answer.status) (its answer is on stdout)")
        }
    }
}
