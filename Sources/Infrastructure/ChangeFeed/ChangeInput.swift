import Ledger

/// What one user had before a write, and when the feed last caught up with time for them: what
/// `ChangeWriter` needs, besides the user's facts after the write, to name the write's changes.
package struct ChangeInput: Sendable {
    package var userId: String
    package var before: ChangeDetector.Facts
    /// When the user's stored document was rendered (nil: none stored, a new user).
    package var announcedAt: Int64?

    package init(userId: String, before: ChangeDetector.Facts, announcedAt: Int64?) {
        self.userId = userId
        self.before = before
        self.announcedAt = announcedAt
    }
}
