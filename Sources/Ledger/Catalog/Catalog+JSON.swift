import JSON

/// The catalog as recorded in the event log (`CatalogVersionRecorded`, docs/api.md §1.1). The
/// canonical form is what the version's hash is taken over, so it must not depend on the order
/// of the config file: products sorted by id, grants by currency, keys in a fixed order.
/// Entitlements keep the configured order (it is the order the config gave; a reordering is
/// rare and only costs one more version).
extension Catalog {
    public func canonicalJSON() -> [UInt8] {
        var w = JSONWriter(capacity: 64 + products.count * 96)
        w.beginObject()
        w.key("products")
        w.beginObject()
        for id in products.keys.sorted() {
            let product = products[id]!
            w.key(id)
            w.beginObject()
            w.key("type")
            w.string(product.type.rawValue)
            w.key("entitlements")
            w.beginArray()
            for entitlement in product.entitlements { w.string(entitlement) }
            w.endArray()
            w.key("grants")
            w.beginObject()
            for (currency, amount) in product.grants.sorted(by: { $0.key < $1.key }) {
                w.key(currency)
                w.int(amount)
            }
            w.endObject()
            // Only when set, so a catalog without durations keeps the hash it always had.
            if let duration = product.duration {
                w.key("duration")
                w.string(duration.description)
            }
            if let period = product.period {
                w.key("period")
                w.string(period.rawValue)
            }
            if let group = product.group {
                w.key("group")
                w.string(group)
            }
            w.endObject()
        }
        w.endObject()
        w.endObject()
        return w.bytes
    }

    /// A catalog from its canonical JSON (a recorded version). Unknown keys are ignored, so an
    /// older reader still understands a newer catalog's products.
    public init(canonicalJSON value: JSONValue) throws(CatalogDecodingError) {
        guard let products = value["products"]?.objectValue else {
            throw CatalogDecodingError(message: "no products object")
        }
        var decoded: [String: Product] = [:]
        for (id, entry) in products {
            guard let typeName = entry["type"]?.stringValue, let type = ProductType(rawValue: typeName) else {
                throw CatalogDecodingError(message: "product \(id): unknown type")
            }
            let entitlements = entry["entitlements"]?.arrayValue?.compactMap(\.stringValue) ?? []
            var grants: [String: Int64] = [:]
            for (currency, amount) in entry["grants"]?.objectValue ?? [:] {
                guard let amount = amount.int64Value else {
                    throw CatalogDecodingError(message: "product \(id): grant \(currency) is not an integer")
                }
                grants[currency] = amount
            }
            var duration: ISODuration?
            if let text = entry["duration"]?.stringValue {
                guard let parsed = ISODuration(text) else {
                    throw CatalogDecodingError(message: "product \(id): duration \(text) is not an ISO 8601 duration")
                }
                duration = parsed
            }
            // A period this reader does not know (a later version's) is left out, not refused:
            // it only weighs money, never what a product grants.
            let period = entry["period"]?.stringValue.flatMap(BillingPeriod.init(rawValue:))
            decoded[id] = Product(
                type: type, entitlements: entitlements, grants: grants, duration: duration, period: period,
                group: entry["group"]?.stringValue)
        }
        self.init(products: decoded)
    }
}

public struct CatalogDecodingError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public var description: String { "recorded catalog: \(message)" }
}
