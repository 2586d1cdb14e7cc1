import Foundation
import JSON
import Ledger

extension ConfigurationReader {
    /// `retention` (docs/api.md §8, docs/config.md): the rules that answer Apple's Retention
    /// Messaging requests for this app. Every rule is checked now, so a bad one stops start-up
    /// naming its key instead of Apple getting a wrong answer (or none) later.
    package func retention(_ value: JSONValue, at key: String, hasOfferKey: Bool) throws(ConfigurationError)
        -> RetentionRules
    {
        let members = try object(value, at: key)
        try allowOnly(["rules"], in: members, at: key)
        guard let list = members["rules"] else { throw error("\(key).rules", "is required (a list of rules)") }
        var rules: [RetentionRules.Rule] = []
        for (index, entry) in try array(list, at: "\(key).rules").enumerated() {
            rules.append(try retentionRule(entry, at: "\(key).rules[\(index)]", hasOfferKey: hasOfferKey))
        }
        return RetentionRules(rules: rules)
    }

    private func retentionRule(_ value: JSONValue, at key: String, hasOfferKey: Bool) throws(ConfigurationError)
        -> RetentionRules.Rule
    {
        let members = try object(value, at: key)
        try allowOnly(
            ["productId", "locale", "minTenureMonths", "message", "alternateProduct", "promotionalOffer"], in: members,
            at: key)
        func text(_ name: String, in members: [String: JSONValue], at key: String) throws(ConfigurationError) -> String?
        {
            guard let entry = members[name], !entry.isNull else { return nil }
            let word = try string(entry, at: "\(key).\(name)")
            guard !word.isEmpty else { throw error("\(key).\(name)", "must not be empty") }
            return word
        }
        // Apple's messageIdentifier is a UUID (the message's id in App Store Connect).
        func messageId(_ name: String, in members: [String: JSONValue], at key: String) throws(ConfigurationError)
            -> String?
        {
            guard let word = try text(name, in: members, at: key) else { return nil }
            guard let uuid = UUID(uuidString: word) else {
                throw error(
                    "\(key).\(name)",
                    "must be a UUID (Apple's messageIdentifier of a message in App Store Connect), got \"\(word)\"")
            }
            return uuid.uuidString.lowercased()
        }
        var minTenure: Int64?
        if let entry = members["minTenureMonths"], !entry.isNull {
            guard let number = entry.int64Value, number >= 0, case .number(let lexeme) = entry, Int64(lexeme) != nil
            else {
                throw error("\(key).minTenureMonths", "expected a whole number of months (0 or more)")
            }
            minTenure = number
        }
        let answers = ["message", "alternateProduct", "promotionalOffer"].filter {
            members[$0].map { !$0.isNull } ?? false
        }
        guard answers.count == 1 else {
            throw error(
                key, "needs exactly one of message, alternateProduct, promotionalOffer (found \(answers.count))")
        }
        let action: RetentionRules.Action
        switch answers[0] {
        case "message":
            action = .message(messageId: try messageId("message", in: members, at: key)!)
        case "alternateProduct":
            let inner = "\(key).alternateProduct"
            let fields = try object(members["alternateProduct"]!, at: inner)
            try allowOnly(["productId", "messageId"], in: fields, at: inner)
            guard let product = try text("productId", in: fields, at: inner) else {
                throw error("\(inner).productId", "is required")
            }
            action = .alternateProduct(productId: product, messageId: try messageId("messageId", in: fields, at: inner))
        default:
            let inner = "\(key).promotionalOffer"
            let fields = try object(members["promotionalOffer"]!, at: inner)
            try allowOnly(["offerId", "messageId"], in: fields, at: inner)
            guard let offer = try text("offerId", in: fields, at: inner) else {
                throw error("\(inner).offerId", "is required")
            }
            // The offer is signed as POST /v1/offers/signatures signs it: with the app's key.
            guard hasOfferKey else {
                throw error(inner, "needs the app's serverAPI key with an issuerId: the offer is signed with it")
            }
            action = .promotionalOffer(offerId: offer, messageId: try messageId("messageId", in: fields, at: inner))
        }
        return RetentionRules.Rule(
            productId: try text("productId", in: members, at: key), locale: try text("locale", in: members, at: key),
            minTenureMonths: minTenure, action: action)
    }
}
