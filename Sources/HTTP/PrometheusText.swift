/// Writing the Prometheus text exposition format 0.0.4.
enum PrometheusText {
    static func header(into out: inout [UInt8], name: String, help: String, type: String) {
        out.append(contentsOf: "# HELP \(name) ".utf8)
        for byte in help.utf8 {
            switch byte {
            case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
            case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
            default: out.append(byte)
            }
        }
        out.append(contentsOf: "\n# TYPE \(name) \(type)\n".utf8)
    }

    /// Every series of one family, in a stable order (sorted label values).
    static func samples(into out: inout [UInt8], name: String, labelNames: [String], series: [[String]: Double]) {
        for labels in series.keys.sorted(by: labelOrder) {
            sample(into: &out, name: name, labelNames: labelNames, labels: labels, value: series[labels]!)
        }
    }

    static func sample(into out: inout [UInt8], name: String, labelNames: [String], labels: [String], value: Double) {
        out.append(contentsOf: name.utf8)
        if !labelNames.isEmpty {
            out.append(UInt8(ascii: "{"))
            for (i, labelName) in labelNames.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                out.append(contentsOf: labelName.utf8)
                out.append(contentsOf: "=\"".utf8)
                for byte in labels[i].utf8 {
                    switch byte {
                    case UInt8(ascii: "\\"): out.append(contentsOf: "\\\\".utf8)
                    case UInt8(ascii: "\""): out.append(contentsOf: "\\\"".utf8)
                    case UInt8(ascii: "\n"): out.append(contentsOf: "\\n".utf8)
                    default: out.append(byte)
                    }
                }
                out.append(UInt8(ascii: "\""))
            }
            out.append(UInt8(ascii: "}"))
        }
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: format(value).utf8)
        out.append(UInt8(ascii: "\n"))
    }

    /// Integers without ".0", `+Inf`/`-Inf`/`NaN` as Prometheus spells them.
    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 9_007_199_254_740_992 { return String(Int64(value)) }
        return value.description
    }

    /// `[a-zA-Z_:][a-zA-Z0-9_:]*`
    static func isValidName(_ name: String) -> Bool {
        guard let first = name.utf8.first, !(UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else {
            return false
        }
        return name.utf8.allSatisfy { c in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(c) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(c)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(c) || c == UInt8(ascii: "_")
                || c == UInt8(ascii: ":")
        }
    }

    static func labelOrder(_ a: [String], _ b: [String]) -> Bool {
        a.lexicographicallyPrecedes(b)
    }
}
