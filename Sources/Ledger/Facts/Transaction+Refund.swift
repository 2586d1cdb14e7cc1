extension Transaction {
    /// `revocationPercentage` of a whole refund: Apple's milliunits, 100000 = 100 %.
    public static let wholeRefund: Int64 = 100_000

    /// What this version's refund takes back of `credit` (a consumable's credit in one
    /// currency, `grants × quantity`), api.md §3.1: nothing while it is not revoked; with a
    /// `revocationPercentage`, that share rounded down, so the customer keeps the rest; without
    /// one (a full refund, a family revoke, every refund recorded before Apple sent shares), all
    /// of it. A reversal re-signs the transaction without revocation, so it takes back nothing
    /// and the credit is whole again.
    ///
    /// The one rule: the balance, the change feed's refund amounts and the consumption
    /// attribution all ask it here.
    public func takenBack(of credit: Int64) -> Int64 {
        guard revocationDate != nil else { return 0 }
        guard let percentage = revocationPercentage else { return credit }
        // A share outside 0…100 % is not one Apple sends; bound it rather than mint or lose coins.
        let share = min(max(percentage, 0), Self.wholeRefund)
        // Full width: `credit × share` outgrows Int64 for a credit above ~9·10¹³; the quotient
        // (at most `credit`) does not. Truncation is rounding down for the positive credits.
        return Self.wholeRefund.dividingFullWidth(credit.multipliedFullWidth(by: share)).quotient
    }

    /// What of `credit` this version still gives the customer: `credit − takenBack(of:)`.
    public func kept(of credit: Int64) -> Int64 { credit - takenBack(of: credit) }
}
