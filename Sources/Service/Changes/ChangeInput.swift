import Infrastructure
import Ledger

/// What one user had before a write, and when the feed last caught up with time for them: what
/// `ChangeWriter` needs, besides the user's facts after the write, to name the write's changes.
struct ChangeInput: Sendable {
    var userId: String
    var before: ChangeDetector.Facts
    /// When the user's stored document was rendered (nil: none stored, a new user).
    var announcedAt: Int64?
}
