#if canImport(Glibc)
    import Glibc
#endif

/// A lock over a value on a plain (non-priority-inheriting) pthread mutex. `Mutex` of the
/// Synchronization module spins and then takes a priority-inheritance futex on Linux; on a
/// lock that every read takes (the document cache check's queue), with more runnable threads than
/// cores, the spinning and the PI futex's kernel path cost a fifth of the service's CPU.
/// Here, not in Service, because the HTTP target's metrics take such locks on every request too.
public final class PlainMutex<Value>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var value: Value

    public init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
