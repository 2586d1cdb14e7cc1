import Arguments
import Foundation
import JSON

/// The order IDs of the test store (`testkit orders`, `testkit apple`'s Look Up Order ID):
/// Apple prints one on the customer's e-mail receipt for every purchase and renewal, ten
/// capital letters and digits (MK5TTTVWJH). The test store's are "MT" and the transaction id
/// in base 36, so every minted transaction has one without anything more in the state, and
/// the same store always answers the same order for it.
enum TestkitOrders {
    /// The order ID of a minted transaction: "MT" + its id in base 36, upper case, eight
    /// digits at least: 2000000001, the first of a new store, is MT00X2QXVL.
    static func orderId(ofTransaction transactionId: String) -> String {
        guard let number = UInt64(transactionId) else { return "MT" + transactionId.uppercased() }
        let digits = String(number, radix: 36, uppercase: true)
        return "MT" + String(repeating: "0", count: max(0, 8 - digits.count)) + digits
    }

    /// One line of `testkit orders`.
    struct Line: Equatable {
        var orderId: String
        var transactionId: String
        var originalTransactionId: String
        var productId: String
        /// The `--user` the chain was bought for; nil: none was named (`--print`).
        var user: String?
    }

    /// Every minted transaction's order, in minting order; only `user`'s when given.
    static func lines(_ state: TestkitState, user: String? = nil) -> [Line] {
        state.transactions.compactMap { transaction in
            guard let id = transaction["transactionId"]?.stringValue else { return nil }
            let chain = transaction["originalTransactionId"]?.stringValue ?? id
            let owner = state.customers[chain]
            if let user, owner != user { return nil }
            return Line(
                orderId: orderId(ofTransaction: id), transactionId: id, originalTransactionId: chain,
                productId: transaction["productId"]?.stringValue ?? "", user: owner)
        }
    }
}

extension TestkitCommand {
    /// `testkit orders [--user U]`: the order ID of every transaction minted so far (what the
    /// customer's App Store e-mail receipt would show), for `GET /v1/lookup?orderId=`.
    static func orders(_ parsed: CommandLineArguments, _ load: @escaping TestkitConfiguration.Loader) throws -> Int32 {
        let user = try parsed.options["user"].map(validUser)
        let store = try store(parsed, load)
        let state = try store.loadState()
        print("orderId\ttransactionId\toriginalTransactionId\tproductId\tuser")
        for line in TestkitOrders.lines(state, user: user) {
            print(
                [line.orderId, line.transactionId, line.originalTransactionId, line.productId, line.user ?? "-"]
                    .joined(separator: "\t"))
        }
        return 0
    }
}
