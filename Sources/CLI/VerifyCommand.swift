import AppStore
import Arguments
import Foundation
import Infrastructure
import JSON
import Service

/// `iap-ledger verify`: verifies one signed payload exactly as ingestion would, offline.
package enum VerifyCommand {
    package static func run(_ arguments: [String]) throws -> Int32 {
        let parsed = try CommandLineArguments(arguments, valued: ["config", "kind"], switches: [])
        let verifyUsage = "usage: iap-ledger verify [--config FILE] [--kind transaction|renewal|notification] FILE|-"
        if parsed.wantsHelp {
            print(verifyUsage)
            return 0
        }
        guard parsed.positionals.count == 1 else {
            CommandLineInterface.printError(verifyUsage)
            return 2
        }
        let configuration = try CommandLineInterface.loadConfiguration(parsed)
        let source = parsed.positionals[0]
        let data =
            source == "-"
            ? FileHandle.standardInput.readDataToEndOfFile()
            : FileHandle(forReadingAtPath: source)?.readDataToEndOfFile()
        guard let data else { throw CommandLineArguments.UsageError(description: "cannot read \(source)") }
        let jws = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        let verifier = try ServiceApp.makeVerifier(configuration: configuration)
        let kindWord = parsed.options["kind"] ?? PayloadPeek.kind(of: jws)
        guard let kind = SignedDataKind(rawValue: kindWord) else {
            throw CommandLineArguments.UsageError(description: "--kind must be transaction, renewal or notification")
        }
        do {
            print(try verifier.decodedJSON(kind: kind, jws: jws))
            return 0
        } catch {
            print(error.reason.rawValue)
            // An explicit --kind that does not match the payload fails on some unrelated field
            // ("bundleId missing"): say what the payload looks like instead of leaving a riddle.
            var hint = ""
            if let looksLike = PayloadPeek.detectedKind(of: jws), looksLike != kind.rawValue {
                hint = " (the payload looks like a \(looksLike), not a \(kind.rawValue): try --kind \(looksLike))"
            }
            CommandLineInterface.printError("rejected: \(error.detail)\(hint)")
            return 1
        }
    }
}

/// Reads a JWS payload without verifying it, only to pick the verifier method to run.
package enum PayloadPeek {
    package static func kind(of jws: String) -> String { detectedKind(of: jws) ?? "transaction" }

    /// The kind the payload's fields show, or nil when it shows none (not a JWS, no telling field).
    package static func detectedKind(of jws: String) -> String? {
        let segments = jws.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count == 3 else { return nil }
        var text = segments[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        guard let data = Data(base64Encoded: text), let payload = try? JSONValue.parse(Array(data)) else {
            return nil
        }
        if payload["notificationType"] != nil { return "notification" }
        if payload["transactionId"] != nil { return "transaction" }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil { return "renewal" }
        return nil
    }
}
