import Glibc

/// Calls `body` with a C array of C strings (NULL entries for nil), valid only during the call.
/// libpq's `const char * const *` parameters do not bridge from `[String]` (swift-on-linux, pitfall 9).
func withCStringArray<R>(_ strings: [String?], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { string in string.map { strdup($0)! } }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { $0.map { UnsafePointer($0) } })
}
