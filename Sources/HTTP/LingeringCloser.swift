import Synchronization
import SystemCalls

#if canImport(Glibc)
    import Glibc
#endif

/// nginx's lingering close. When the server refuses a request whose input is still arriving
/// (413 on a declared body, MHD's own 431/400 on a head), MHD sends the answer and closes the
/// socket; closing with unread input makes the kernel answer the client with a reset, and a
/// reset destroys the refusal the client has not read yet. So such a socket is kept open (a
/// `dup` taken just before MHD closes its descriptor): its write side is already shut (MHD
/// sends FIN after the answer), and one thread reads and discards what still arrives until
/// the client closes, or for at most `seconds` and `bytes`, whichever ends first.
final class LingeringCloser: Sendable {
    let seconds: Double
    let bytes: Int
    let capacity: Int

    private struct Lingering {
        var fd: Int32
        var deadline: ContinuousClock.Instant
        var budget: Int
    }

    private struct State {
        /// Sockets whose request was refused before its input was read: linger when MHD closes them.
        var flagged: Set<Int32> = []
        /// Handed over by MHD's threads, not yet picked up by the draining thread.
        var adopted: [Lingering] = []
        var lingering = 0
        var thread: pthread_t?
        var stopping = false
    }

    private let state = Mutex(State())
    /// Self-pipe that wakes the draining thread out of `poll` (new socket, stop).
    private let wakeRead: Int32
    private let wakeWrite: Int32

    init(seconds: Double, bytes: Int, capacity: Int) {
        self.seconds = seconds
        self.bytes = bytes
        self.capacity = capacity
        var fds: [Int32] = [-1, -1]
        if pipe(&fds) != 0 { fds = [-1, -1] }
        for fd in fds where fd >= 0 {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = fds[0]
        wakeWrite = fds[1]
    }

    deinit {
        if wakeRead >= 0 { close(wakeRead) }
        if wakeWrite >= 0 { close(wakeWrite) }
    }

    /// Starts the draining thread (once per server start).
    func start() {
        state.withLock { state in
            guard state.thread == nil, wakeRead >= 0 else { return }
            state.stopping = false
            var thread = pthread_t()
            let box = Unmanaged.passRetained(self).toOpaque()
            let created = pthread_create(
                &thread, nil,
                { box in
                    let closer = Unmanaged<LingeringCloser>.fromOpaque(box!).takeRetainedValue()
                    closer.drainLoop()
                    return nil
                }, box)
            if created == 0 {
                state.thread = thread
            } else {
                Unmanaged<LingeringCloser>.fromOpaque(box).release()
            }
        }
    }

    /// Closes every lingering socket and joins the thread. After MHD_stop_daemon.
    func stop() {
        let thread: pthread_t? = state.withLock { state in
            state.stopping = true
            state.flagged = []
            defer { state.thread = nil }
            return state.thread
        }
        guard let thread else { return }
        wake()
        pthread_join(thread, nil)
    }

    /// The request on `fd` was refused before its input was read.
    func flag(_ fd: Int32) {
        guard fd >= 0 else { return }
        state.withLock { _ = $0.flagged.insert(fd) }
    }

    /// MHD is about to close `fd` (it has sent its answer and shut the write side): linger when
    /// the connection was flagged or input is waiting unread, else let MHD close it as usual.
    func connectionClosing(_ fd: Int32) {
        guard fd >= 0 else { return }
        let flagged = state.withLock { $0.flagged.remove(fd) != nil }
        guard flagged || Self.hasUnreadInput(fd) else { return }
        let kept = dup(fd)
        guard kept >= 0 else { return }
        _ = fcntl(kept, F_SETFD, FD_CLOEXEC)
        _ = fcntl(kept, F_SETFL, fcntl(kept, F_GETFL) | O_NONBLOCK)
        shutdown(kept, Int32(SHUT_WR))
        let entry = Lingering(
            fd: kept, deadline: ContinuousClock.now.advanced(by: .milliseconds(Int(seconds * 1000))), budget: bytes)
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping, state.thread != nil, state.lingering < capacity else { return false }
            state.lingering += 1
            state.adopted.append(entry)
            return true
        }
        if accepted { wake() } else { close(kept) }
    }

    private static func hasUnreadInput(_ fd: Int32) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func drainLoop() {
        var sockets: [Lingering] = []
        var scratch = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let (adopted, stopping) = state.withLock { state in
                defer { state.adopted = [] }
                return (state.adopted, state.stopping)
            }
            sockets += adopted
            if stopping {
                for socket in sockets { close(socket.fd) }
                state.withLock { $0.lingering -= sockets.count }
                return
            }
            var polled = [pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            polled += sockets.map { pollfd(fd: $0.fd, events: Int16(POLLIN), revents: 0) }
            let now = ContinuousClock.now
            let timeout: Int32 =
                sockets.map { $0.deadline }.min().map { deadline in
                    let left = now.duration(to: deadline).components
                    return Int32(clamping: max(0, left.seconds * 1000 + left.attoseconds / 1_000_000_000_000_000 + 1))
                } ?? -1
            _ = poll(&polled, nfds_t(polled.count), timeout)
            if polled[0].revents != 0 {
                while read(wakeRead, &scratch, scratch.count) > 0 {}
            }
            let after = ContinuousClock.now
            var kept: [Lingering] = []
            for (index, var socket) in sockets.enumerated() {
                var done = after >= socket.deadline
                if !done && polled[index + 1].revents != 0 {
                    done = discard(&socket, into: &scratch)
                }
                if done { close(socket.fd) } else { kept.append(socket) }
            }
            if kept.count != sockets.count {
                let closed = sockets.count - kept.count
                state.withLock { $0.lingering -= closed }
            }
            sockets = kept
        }
    }

    /// Reads what is there; true when the socket is finished (peer closed, error, budget spent).
    private func discard(_ socket: inout Lingering, into scratch: inout [UInt8]) -> Bool {
        while true {
            let n = scratch.withUnsafeMutableBytes { recv(socket.fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 {
                socket.budget -= n
                if socket.budget <= 0 { return true }
                continue
            }
            if n == 0 { return true }
            let code = SystemCallError.last.code
            return code != EAGAIN && code != EWOULDBLOCK && code != EINTR
        }
    }
}
