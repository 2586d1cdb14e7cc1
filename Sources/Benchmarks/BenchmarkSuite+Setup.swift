import EventStore
import Foundation
import Infrastructure
import Ledger
import Service
import TestSupport

/// What every benchmark run sets up: the machine line of the report and the service config.
extension BenchmarkSuite {
    func machine() -> String {
        let cpu =
            (try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8))?
            .split(separator: "\n").first { $0.hasPrefix("model name") }
            .map { $0.split(separator: ":", maxSplits: 1).last!.trimmingCharacters(in: .whitespaces) } ?? "unknown CPU"
        return "\(ProcessInfo.processInfo.activeProcessorCount) vCPU (\(cpu))"
    }

    // MARK: Set-up

    /// A config trusting the test PKI root, for the test vectors' app, with the minted product.
    func writeConfiguration(in directory: String) throws -> String {
        try Data(TestVectors.shared.rootDER).write(to: URL(fileURLWithPath: directory + "/testCA.der"))
        let config = """
            {"apps": [{"bundleId": "\(TestVectors.bundleId)", "appAppleId": \(TestVectors.appAppleId),
                       "environments": ["Sandbox", "Production"],
                       "products": {"com.example.monthly": {"type": "subscription", "entitlements": ["pro"]}}}],
             "trustedRoots": ["testCA.der"]}
            """
        let path = directory + "/bench-config.json"
        try config.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }
}
