import Foundation
import JSON

/// The service's clock. The domain never reads it: `now` is passed in as a value.
public enum Timestamp {
    public static func nowMillis() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }

    public static func rfc3339(_ millis: Int64) -> String { RFC3339.format(millis) }
}
