import COpenSSL
import JSON

/// The receipt's ASN.1 through OpenSSL's generic types. An ASN1_TYPE of V_ASN1_SEQUENCE holds
/// its whole encoding, which is how an attribute SEQUENCE sits inside an ASN1_SET_ANY. Only
/// AppReceiptContents uses it.
enum ASN1 {
    typealias TypePointer = UnsafeMutablePointer<ASN1_TYPE>

    // MARK: values, each returned as its DER

    static func utf8(_ text: String) -> [UInt8] { der(primitive(V_ASN1_UTF8STRING, Array(text.utf8))) }
    static func date(_ millis: Int64) -> [UInt8] {
        der(primitive(V_ASN1_IA5STRING, Array(AppReceiptContents.dateText(millis).utf8)))
    }
    static func integer(_ value: Int64) -> [UInt8] { der(integerType(value)) }

    /// `SEQUENCE { type, version 1, OCTET STRING value }` as DER.
    static func attribute(_ type: Int, _ value: [UInt8]) -> [UInt8] {
        collection([integerType(Int64(type)), integerType(1), primitive(V_ASN1_OCTET_STRING, value)], set: false)
    }

    /// A DER SET of already encoded elements (OpenSSL sorts it as DER wants).
    static func set(_ elements: [[UInt8]]) -> [UInt8] { collection(elements.map(constructed), set: true) }

    private static func primitive(_ tag: Int32, _ bytes: [UInt8]) -> TypePointer {
        guard let type = ASN1_TYPE_new(), let string = ASN1_STRING_type_new(tag) else {
            OpenSSLErrors.fatal("ASN1_TYPE_new")
        }
        guard ASN1_STRING_set(string, bytes, Int32(bytes.count)) == 1 else { OpenSSLErrors.fatal("ASN1_STRING_set") }
        ASN1_TYPE_set(type, tag, UnsafeMutableRawPointer(string))  // the type owns the string now
        return type
    }

    private static func integerType(_ value: Int64) -> TypePointer {
        guard let type = ASN1_TYPE_new(), let integer = ASN1_INTEGER_new() else {
            OpenSSLErrors.fatal("ASN1_INTEGER_new")
        }
        guard ASN1_INTEGER_set_int64(integer, value) == 1 else { OpenSSLErrors.fatal("ASN1_INTEGER_set_int64") }
        ASN1_TYPE_set(type, V_ASN1_INTEGER, UnsafeMutableRawPointer(integer))
        return type
    }

    /// An ASN1_TYPE holding a complete SEQUENCE or SET encoding.
    private static func constructed(_ der: [UInt8]) -> TypePointer {
        guard let type = ASN1_TYPE_new(), let string = ASN1_STRING_new() else { OpenSSLErrors.fatal("ASN1_STRING_new") }
        guard ASN1_STRING_set(string, der, Int32(der.count)) == 1 else { OpenSSLErrors.fatal("ASN1_STRING_set") }
        ASN1_TYPE_set(type, der.first == 0x31 ? V_ASN1_SET : V_ASN1_SEQUENCE, UnsafeMutableRawPointer(string))
        return type
    }

    private static func der(_ type: TypePointer) -> [UInt8] {
        defer { ASN1_TYPE_free(type) }
        guard let out = DEREncoding.bytes({ i2d_ASN1_TYPE(type, $0) }) else { OpenSSLErrors.fatal("i2d_ASN1_TYPE") }
        return out
    }

    /// Consumes `elements` (the stack frees them).
    private static func collection(_ elements: [TypePointer], set: Bool) -> [UInt8] {
        guard let stack = COpenSSL_sk_ASN1_TYPE_new_null() else { OpenSSLErrors.fatal("sk_ASN1_TYPE_new_null") }
        defer { COpenSSL_sk_ASN1_TYPE_pop_free(stack) }
        for element in elements where COpenSSL_sk_ASN1_TYPE_push(stack, element) <= 0 {
            OpenSSLErrors.fatal("sk_ASN1_TYPE_push")
        }
        guard let out = DEREncoding.bytes({ set ? i2d_ASN1_SET_ANY(stack, $0) : i2d_ASN1_SEQUENCE_ANY(stack, $0) })
        else { OpenSSLErrors.fatal(set ? "i2d_ASN1_SET_ANY" : "i2d_ASN1_SEQUENCE_ANY") }
        return out
    }

    // MARK: decoding

    /// One decoded element: its universal tag and its content (a constructed one: its whole DER).
    enum Element {
        case integer(Int64?)
        case string(tag: Int32, bytes: [UInt8])
    }

    private static func element(_ type: UnsafePointer<ASN1_TYPE>) -> Element {
        let tag = ASN1_TYPE_get(type)
        guard let string = COpenSSL_ASN1_TYPE_string(type) else { return .string(tag: tag, bytes: []) }
        if tag == V_ASN1_INTEGER {
            var value: Int64 = 0
            return .integer(ASN1_INTEGER_get_int64(&value, string) == 1 ? value : nil)
        }
        let count = Int(ASN1_STRING_length(string))
        let bytes = count > 0 ? Array(UnsafeBufferPointer(start: ASN1_STRING_get0_data(string), count: count)) : []
        return .string(tag: tag, bytes: bytes)
    }

    /// The elements of a DER SET (or SEQUENCE) that fills `der` exactly; nil when it is not one.
    private static func elements(_ der: [UInt8], set: Bool) -> [Element]? {
        der.withUnsafeBufferPointer { buffer -> [Element]? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let parsed =
                set ? d2i_ASN1_SET_ANY(nil, &cursor, buffer.count) : d2i_ASN1_SEQUENCE_ANY(nil, &cursor, buffer.count)
            guard let stack = parsed else {
                _ = OpenSSLErrors.drain()
                return nil
            }
            defer { COpenSSL_sk_ASN1_TYPE_pop_free(stack) }
            guard let cursor, cursor - buffer.baseAddress! == buffer.count else { return nil }
            return (0..<COpenSSL_sk_ASN1_TYPE_num(stack)).compactMap { index in
                COpenSSL_sk_ASN1_TYPE_value(stack, index).map { element(UnsafePointer($0)) }
            }
        }
    }

    /// A single DER value filling `der` exactly.
    private static func value(_ der: [UInt8]) -> Element? {
        der.withUnsafeBufferPointer { buffer -> Element? in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            guard let type = d2i_ASN1_TYPE(nil, &cursor, buffer.count) else {
                _ = OpenSSLErrors.drain()
                return nil
            }
            defer { ASN1_TYPE_free(type) }
            guard let cursor, cursor - buffer.baseAddress! == buffer.count else { return nil }
            return element(UnsafePointer(type))
        }
    }

    /// `(type, value octets)` of each ReceiptAttribute in a SET.
    static func attributes(_ der: [UInt8], what: String) throws(ReceiptError) -> [(Int, [UInt8])] {
        guard let members = elements(der, set: true) else { throw .notAReceipt("\(what) is not a DER SET") }
        var attributes: [(Int, [UInt8])] = []
        for member in members {
            guard case .string(V_ASN1_SEQUENCE, let bytes) = member, let fields = elements(bytes, set: false),
                fields.count == 3, case .integer(let type?) = fields[0], case .integer(_?) = fields[1],
                case .string(V_ASN1_OCTET_STRING, let value) = fields[2], let exact = Int(exactly: type)
            else { throw .notAReceipt("\(what) holds something other than SEQUENCE { type, version, OCTET STRING }") }
            attributes.append((exact, value))
        }
        return attributes
    }

    static func string(_ value: [UInt8], field: String) throws(ReceiptError) -> String {
        guard case .string(let tag, let bytes)? = self.value(value),
            tag == V_ASN1_UTF8STRING || tag == V_ASN1_IA5STRING,
            let text = String(validating: bytes, as: UTF8.self)
        else { throw .notAReceipt("receipt \(field) is not a UTF8String") }
        return text
    }

    static func dateValue(_ value: [UInt8], field: String) throws(ReceiptError) -> Int64 {
        guard case .string(V_ASN1_IA5STRING, let bytes)? = self.value(value),
            let millis = RFC3339.parse(String(decoding: bytes, as: UTF8.self))
        else { throw .notAReceipt("receipt \(field) is not an IA5String RFC 3339 date") }
        return millis
    }

    static func integerValue(_ value: [UInt8], field: String) throws(ReceiptError) -> Int64 {
        guard case .integer(let number?)? = self.value(value) else {
            throw .notAReceipt("receipt \(field) is not an INTEGER")
        }
        return number
    }
}
