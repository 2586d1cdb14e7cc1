import EventStore
import JSON

/// The COPY text rows the replay loads into `proj.users` and `chain_owners`, in those tables'
/// column order (the codec itself is EventStore's `CopyText`).
extension CopyText {
    static func appendUserRow(
        userId: String, version: Int64, document: [UInt8], renderedAt: Int64, validUntil: Int64?,
        into out: inout [UInt8]
    ) {
        CopyText.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(version).utf8)
        out.append(0x09)
        CopyText.escape(bytes: document, into: &out)
        out.append(0x09)
        out.append(contentsOf: String(renderedAt).utf8)
        out.append(0x09)
        if let validUntil {
            out.append(contentsOf: String(validUntil).utf8)
        } else {
            out.append(contentsOf: "\\N".utf8)
        }
        out.append(0x0A)
    }

    static func appendOwnerRow(otid: String, userId: String, claimedAt: Int64, into out: inout [UInt8]) {
        CopyText.escape(otid, into: &out)
        out.append(0x09)
        CopyText.escape(userId, into: &out)
        out.append(0x09)
        out.append(contentsOf: RFC3339.format(claimedAt).utf8)
        out.append(0x0A)
    }
}
