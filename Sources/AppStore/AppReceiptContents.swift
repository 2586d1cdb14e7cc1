import COpenSSL
import JSON

/// What an app receipt's signed content says, in Apple's receipt format ("Receipt Fields"): a DER
/// SET of `ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`,
/// each value itself DER (a UTF8String, an IA5String RFC 3339 date, an INTEGER), and each in-app
/// purchase (type 17) a SET of such attributes again. This is what Apple's ReceiptUtility reads
/// transaction ids out of, and what the test store mints (`testkit receipt`).
///
/// Encoded and decoded only through OpenSSL's ASN.1 types (ASN1_TYPE, ASN1_SET_ANY,
/// ASN1_SEQUENCE_ANY): no DER is written or read by hand. Unknown attribute types are skipped on
/// decoding, as Apple adds undocumented ones.
public struct AppReceiptContents: Sendable, Equatable {
    /// One in-app purchase receipt (attribute 17). Dates are epoch milliseconds.
    public struct Purchase: Sendable, Equatable {
        public var quantity: Int
        public var productId: String
        public var transactionId: String
        public var originalTransactionId: String
        public var purchaseDate: Int64
        public var originalPurchaseDate: Int64
        /// Auto-renewable subscriptions only.
        public var expiresDate: Int64?
        /// Auto-renewable subscriptions only: one billing period across devices.
        public var webOrderLineItemId: Int64?
        /// Refunded or revoked.
        public var cancellationDate: Int64?
        /// 1719 (subscription introductory price period): 1 in an introductory offer.
        public var isInIntroOfferPeriod: Bool?

        public init(
            quantity: Int = 1, productId: String, transactionId: String, originalTransactionId: String,
            purchaseDate: Int64, originalPurchaseDate: Int64, expiresDate: Int64? = nil,
            webOrderLineItemId: Int64? = nil, cancellationDate: Int64? = nil, isInIntroOfferPeriod: Bool? = nil
        ) {
            self.quantity = quantity
            self.productId = productId
            self.transactionId = transactionId
            self.originalTransactionId = originalTransactionId
            self.purchaseDate = purchaseDate
            self.originalPurchaseDate = originalPurchaseDate
            self.expiresDate = expiresDate
            self.webOrderLineItemId = webOrderLineItemId
            self.cancellationDate = cancellationDate
            self.isInIntroOfferPeriod = isInIntroOfferPeriod
        }
    }

    public var bundleId: String
    public var appVersion: String
    public var originalAppVersion: String?
    /// 12, when the receipt was made.
    public var creationDate: Int64?
    public var purchases: [Purchase]

    public init(
        bundleId: String, appVersion: String, originalAppVersion: String? = nil, creationDate: Int64? = nil,
        purchases: [Purchase]
    ) {
        self.bundleId = bundleId
        self.appVersion = appVersion
        self.originalAppVersion = originalAppVersion
        self.creationDate = creationDate
        self.purchases = purchases
    }

    /// Apple's attribute types.
    enum Field {
        static let bundleId = 2, appVersion = 3, creationDate = 12, inApp = 17, originalAppVersion = 19
        static let quantity = 1701, productId = 1702, transactionId = 1703, purchaseDate = 1704
        static let originalTransactionId = 1705, originalPurchaseDate = 1706, expiresDate = 1708
        static let webOrderLineItemId = 1711, cancellationDate = 1712, introductoryPricePeriod = 1719
    }

    // MARK: - encoding

    /// The DER of the receipt payload (the content a SignedData signs).
    public func der() -> [UInt8] {
        var attributes = [
            ASN1.attribute(Field.bundleId, ASN1.utf8(bundleId)),
            ASN1.attribute(Field.appVersion, ASN1.utf8(appVersion)),
        ]
        if let originalAppVersion {
            attributes.append(ASN1.attribute(Field.originalAppVersion, ASN1.utf8(originalAppVersion)))
        }
        if let creationDate { attributes.append(ASN1.attribute(Field.creationDate, ASN1.date(creationDate))) }
        for purchase in purchases { attributes.append(ASN1.attribute(Field.inApp, purchase.der())) }
        return ASN1.set(attributes)
    }

    /// Apple writes receipt dates as RFC 3339 to the second; a time with milliseconds keeps them.
    static func dateText(_ millis: Int64) -> String {
        let text = RFC3339.format(millis)
        return millis % 1000 == 0 ? String(text.dropLast(5)) + "Z" : text
    }

    // MARK: - decoding

    /// Reads a receipt payload; throws `.notAReceipt` naming what is not Apple's format.
    public init(der: [UInt8]) throws(ReceiptError) {
        var bundleId: String?
        var appVersion: String?
        var originalAppVersion: String?
        var creationDate: Int64?
        var purchases: [Purchase] = []
        for (type, value) in try ASN1.attributes(der, what: "receipt content") {
            switch type {
            case Field.bundleId: bundleId = try ASN1.string(value, field: "bundle id (2)")
            case Field.appVersion: appVersion = try ASN1.string(value, field: "app version (3)")
            case Field.originalAppVersion:
                originalAppVersion = try ASN1.string(value, field: "original app version (19)")
            case Field.creationDate: creationDate = try ASN1.dateValue(value, field: "creation date (12)")
            case Field.inApp: purchases.append(try Purchase(der: value))
            default: continue
            }
        }
        guard let bundleId else { throw .notAReceipt("receipt content has no bundle id (2)") }
        self.init(
            bundleId: bundleId, appVersion: appVersion ?? "", originalAppVersion: originalAppVersion,
            creationDate: creationDate, purchases: purchases)
    }
}

extension AppReceiptContents.Purchase {
    typealias Field = AppReceiptContents.Field

    func der() -> [UInt8] {
        var attributes = [
            ASN1.attribute(Field.quantity, ASN1.integer(Int64(quantity))),
            ASN1.attribute(Field.productId, ASN1.utf8(productId)),
            ASN1.attribute(Field.transactionId, ASN1.utf8(transactionId)),
            ASN1.attribute(Field.purchaseDate, ASN1.date(purchaseDate)),
            ASN1.attribute(Field.originalTransactionId, ASN1.utf8(originalTransactionId)),
            ASN1.attribute(Field.originalPurchaseDate, ASN1.date(originalPurchaseDate)),
        ]
        if let expiresDate { attributes.append(ASN1.attribute(Field.expiresDate, ASN1.date(expiresDate))) }
        if let webOrderLineItemId {
            attributes.append(ASN1.attribute(Field.webOrderLineItemId, ASN1.integer(webOrderLineItemId)))
        }
        if let cancellationDate {
            attributes.append(ASN1.attribute(Field.cancellationDate, ASN1.date(cancellationDate)))
        }
        if let isInIntroOfferPeriod {
            attributes.append(ASN1.attribute(Field.introductoryPricePeriod, ASN1.integer(isInIntroOfferPeriod ? 1 : 0)))
        }
        return ASN1.set(attributes)
    }

    init(der: [UInt8]) throws(ReceiptError) {
        var quantity = 1
        var productId: String?
        var transactionId: String?
        var originalTransactionId: String?
        var purchaseDate: Int64?
        var originalPurchaseDate: Int64?
        var expiresDate: Int64?
        var webOrderLineItemId: Int64?
        var cancellationDate: Int64?
        var intro: Bool?
        for (type, value) in try ASN1.attributes(der, what: "in-app purchase receipt (17)") {
            switch type {
            case Field.quantity:
                let number = try ASN1.integerValue(value, field: "quantity (1701)")
                guard let exact = Int(exactly: number), exact > 0 else {
                    throw .notAReceipt("in-app quantity (1701) is \(number)")
                }
                quantity = exact
            case Field.productId: productId = try ASN1.string(value, field: "product id (1702)")
            case Field.transactionId: transactionId = try ASN1.string(value, field: "transaction id (1703)")
            case Field.originalTransactionId:
                originalTransactionId = try ASN1.string(value, field: "original transaction id (1705)")
            case Field.purchaseDate: purchaseDate = try ASN1.dateValue(value, field: "purchase date (1704)")
            case Field.originalPurchaseDate:
                originalPurchaseDate = try ASN1.dateValue(value, field: "original purchase date (1706)")
            case Field.expiresDate: expiresDate = try ASN1.dateValue(value, field: "expires date (1708)")
            case Field.webOrderLineItemId:
                webOrderLineItemId = try ASN1.integerValue(value, field: "web order line item id (1711)")
            case Field.cancellationDate: cancellationDate = try ASN1.dateValue(value, field: "cancellation date (1712)")
            case Field.introductoryPricePeriod:
                intro = try ASN1.integerValue(value, field: "introductory price period (1719)") != 0
            default: continue
            }
        }
        guard let productId, let transactionId, let purchaseDate else {
            throw .notAReceipt("an in-app purchase receipt (17) lacks its product id, transaction id or purchase date")
        }
        self.init(
            quantity: quantity, productId: productId, transactionId: transactionId,
            originalTransactionId: originalTransactionId ?? transactionId, purchaseDate: purchaseDate,
            originalPurchaseDate: originalPurchaseDate ?? purchaseDate, expiresDate: expiresDate,
            webOrderLineItemId: webOrderLineItemId, cancellationDate: cancellationDate, isInIntroOfferPeriod: intro)
    }
}
