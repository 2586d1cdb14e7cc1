import JSON

/// The last tie-break between two versions signed in the same millisecond: their canonical
/// encodings, compared bytewise. A total order on content, so the winner never depends on
/// arrival order. Rare (Apple signs distinct versions at distinct instants), so cost is moot.
enum FactOrder {
    static func precedes(_ a: Transaction, _ b: Transaction) -> Bool {
        encoded(a.writeFields).lexicographicallyPrecedes(encoded(b.writeFields))
    }

    static func precedes(_ a: RenewalInfo, _ b: RenewalInfo) -> Bool {
        encoded(a.writeFields).lexicographicallyPrecedes(encoded(b.writeFields))
    }

    private static func encoded(_ write: (inout JSONWriter) -> Void) -> [UInt8] {
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        write(&writer)
        writer.endObject()
        return writer.bytes
    }
}

extension Transaction {
    /// Equal in everything but `signedDate`: the same fact, re-signed (domain: a fact's identity).
    public func hasSameContent(as other: Transaction) -> Bool {
        var copy = self
        copy.signedDate = other.signedDate
        return copy == other
    }
}

extension RenewalInfo {
    /// Equal in everything but `signedDate`: the same renewal info, re-signed.
    public func hasSameContent(as other: RenewalInfo) -> Bool {
        var copy = self
        copy.signedDate = other.signedDate
        return copy == other
    }
}
