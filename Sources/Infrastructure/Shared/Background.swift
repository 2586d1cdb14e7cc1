import Foundation

/// Work run on a helper thread of its own, waited for with `wait` (used to overlap the server's
/// work with ours: whatever connection `work` uses belongs to that thread until `wait` returns).
package final class Background<Value>: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let work: () throws(ServiceError) -> Value
    private var result: Result<Value, ServiceError>?

    package init(_ work: @escaping () throws(ServiceError) -> Value) {
        self.work = work
        let thread = Thread { [self] in run() }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func run() {
        do throws(ServiceError) {
            result = .success(try work())
        } catch {
            result = .failure(error)
        }
        done.signal()
    }

    package func wait() throws(ServiceError) -> Value {
        done.wait()
        done.signal()  // later waits return at once
        return try result!.get()
    }
}
