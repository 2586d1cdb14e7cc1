import CMicroHTTPD

/// The C entry points MHD calls. They are non-capturing; context travels through `cls`/`con_cls`.
enum MHDCallbacks {
    /// Called with the raw request target before MHD unescapes anything; its return value becomes
    /// `*con_cls`, and it makes MHD send NOTIFY_COMPLETED even for requests that never reach the handler.
    static let uriLog:
        @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?)
            -> UnsafeMutableRawPointer? = { cls, uri, _ in
                let context = Unmanaged<DaemonContext>.fromOpaque(cls!).takeUnretainedValue()
                context.liveRequests.wrappingAdd(1, ordering: .relaxed)
                let state = RequestState(target: uri.map { String(cString: $0) } ?? "/")
                return Unmanaged.passRetained(state).toOpaque()
            }

    /// MHD ended a request with an error it answered itself (431 head too large, 400 malformed):
    /// the client may still be sending, so its connection lingers when MHD closes it.
    static let completed: MHD_RequestCompletedCallback = { cls, connection, conCls, toe in
        if toe == .REQUEST_TERMINATED_WITH_ERROR, let cls {
            Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().lingering.flag(
                CMHD_connection_fd(connection))
        }
        guard let conCls, let raw = conCls.pointee else { return }
        Unmanaged<RequestState>.fromOpaque(raw).release()
        conCls.pointee = nil
        let context = Unmanaged<DaemonContext>.fromOpaque(cls!).takeUnretainedValue()
        context.liveRequests.wrappingAdd(-1, ordering: .relaxed)
    }

    /// Called just before MHD closes a connection's socket: the lingering close's chance to keep it.
    static let connectionNotice: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        guard code == .CONNECTION_NOTIFY_CLOSED, let cls else { return }
        Unmanaged<DaemonContext>.fromOpaque(cls).takeUnretainedValue().lingering
            .connectionClosing(CMHD_connection_fd(connection))
    }

    static let access: MHD_AccessHandlerCallback = {
        cls, connection, _, method, _, uploadData, uploadSize, conCls in
        let context = Unmanaged<DaemonContext>.fromOpaque(cls!).takeUnretainedValue()
        guard let conCls, let raw = conCls.pointee else { return .NO }  // uriLog always sets it
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()

        if !state.started {
            // First call: headers only. Return YES without queueing (pitfall 1: queueing now makes
            // MHD answer `Connection: close`), except for a declared oversize body, refused before
            // `100 Continue` is sent (pitfall 3).
            state.started = true
            withUnsafeMutablePointer(to: &state.headers) { headers in
                _ = MHD_get_connection_values(connection, .HEADER_KIND, collectHeader, headers)
            }
            if let length = state.headers["content-length"], let declared = Int(length) {
                if declared > context.maxBodyBytes {
                    // Answered now, while the body may already be on its way: MHD will close
                    // without reading it, so the connection lingers (LingeringCloser).
                    context.lingering.flag(CMHD_connection_fd(connection))
                    return queue(connection, tooLarge(context, state), requestId: nil, context)
                }
                // Capped: a client declaring 1 MiB on many idle connections must not pin that much memory.
                state.body.reserveCapacity(min(declared, 64 * 1024))
            }
            return .YES
        }

        if let uploadSize, uploadSize.pointee > 0 {
            let count = uploadSize.pointee
            if !state.tooLarge {
                if state.body.count + count > context.maxBodyBytes {
                    state.tooLarge = true
                    state.discarded = state.body.count
                    state.body = []
                } else if let uploadData {
                    state.body.append(
                        contentsOf: UnsafeRawBufferPointer(start: UnsafeRawPointer(uploadData), count: count))
                }
            }
            if state.tooLarge {
                // Discarding is bounded like the lingering close: past the budget the upload is cut off.
                state.discarded += count
                if state.discarded > context.maxBodyBytes + context.lingering.bytes { return .NO }
            }
            // Keep consuming an oversize chunked body: a 413 queued mid-upload drops the socket (pitfall 3).
            uploadSize.pointee = 0
            return .YES
        }

        if state.tooLarge {
            return queue(connection, tooLarge(context, state), requestId: nil, context)
        }
        if let deferred = state.deferred {
            if state.suspendPending, let connection {
                // The call after the one that ran the handler (see below): suspend now.
                state.suspendPending = false
                switch context.deferreds.suspend(
                    deferred, connection, context: context, maxWait: context.maxDeferredWait)
                {
                case .suspended:
                    // No response queued and the connection suspended: MHD leaves it alone (no
                    // polling, no timeout) until `complete` resumes it and calls us again.
                    return .YES
                case .ready(let response):
                    state.deferred = nil  // completed in between: answer now
                    return queue(connection, response, requestId: state.requestId, context)
                }
            }
            // Called again after `MHD_resume_connection`: the handle was completed (by its
            // owner, its deadline or `stop()`) before it resumed us, so the answer is there.
            state.deferred = nil
            guard let response = deferred.take() else { return .NO }
            return queue(connection, response, requestId: state.requestId, context)
        }
        let request = makeRequest(method: method, state: state)
        var response = context.handler(request)
        if let deferred = response.deferred, let connection {
            if let ready = deferred.take() {
                response = ready  // completed before we could suspend (a cache hit): answer now
            } else {
                // Suspended in the next call, not in this one. MHD 0.9.75 leaves a suspended
                // connection's poll interest as it was before the request was parsed (reading:
                // it skips that bookkeeping while suspended), so after the resume it reads the
                // socket before it calls us for the answer; a client that half-closed after
                // its request (`shutdown(SHUT_WR)`: nc -N, proxies, HTTP/1.0 clients) has left
                // an end-of-file there, and on it MHD closes the connection without an answer.
                // Returning with no response and no suspension ends this pass with the interest
                // updated to "wait for the answer, read nothing" and MHD polling again at once
                // (zero timeout); suspended in that call, the connection keeps that interest,
                // and after the resume MHD calls us before it reads anything. The cost is one
                // extra poll of the worker per deferred request.
                state.deferred = deferred
                state.requestId = request.requestId
                state.suspendPending = true
                // A long poll's deadline runs from now: should the client go away before the
                // next call, the handle still ends (its waiter list drops it).
                deferred.armDeadline(maxWait: context.maxDeferredWait)
                return .YES
            }
        }
        return queue(connection, response, requestId: request.requestId, context)
    }

    private static let collectHeader: MHD_KeyValueIterator = { cls, _, key, value in
        guard let cls, let key else { return .YES }
        let headers = cls.assumingMemoryBound(to: [String: String].self)
        let name = String(cString: key).lowercased()
        let text = value.map { String(cString: $0) } ?? ""
        if let existing = headers.pointee[name] {
            headers.pointee[name] = existing + ", " + text
        } else {
            headers.pointee[name] = text
        }
        return .YES
    }

    private static func makeRequest(method: UnsafePointer<CChar>?, state: RequestState) -> HTTPRequest {
        let target = Substring(state.target)
        let path: Substring
        let query: [String: String]
        if let mark = target.firstIndex(of: "?") {
            path = target[..<mark]
            query = PercentDecoding.parseQuery(target[target.index(after: mark)...])
        } else {
            path = target
            query = [:]
        }
        let body = state.body
        state.body = []
        return HTTPRequest(
            method: method.map { String(cString: $0) } ?? "GET",
            path: String(path),
            query: query,
            headers: state.headers,
            body: body,
            requestId: RequestID.accept(state.headers["x-request-id"]) ?? RequestID.next())
    }

    /// Answered before the handler runs, so it carries the request id itself (in the body as
    /// every other problem does, and in the header).
    private static func tooLarge(_ context: DaemonContext, _ state: RequestState) -> HTTPResponse {
        let requestId = RequestID.accept(state.headers["x-request-id"]) ?? RequestID.next()
        var response = HTTPResponse.problem(
            status: 413, code: "payload_too_large", title: "Payload Too Large",
            detail: "The request body is larger than \(context.maxBodyBytes) bytes.",
            extra: ["requestId": .string(requestId)])
        response.headers["X-Request-Id"] = requestId
        return response
    }

    /// Hands `response` to MHD with `X-Request-Id: requestId` (when given, in place of any the
    /// handler set): added here rather than into `response.headers`, whose insert grew and
    /// copied a dictionary per request (~3 % of a cached read's CPU in issue 39's profile).
    private static func queue(
        _ connection: OpaquePointer?, _ response: HTTPResponse, requestId: String?, _ context: DaemonContext
    ) -> MHD_Result {
        let mhdResponse = response.body.withUnsafeBytes { bytes in
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse else { return .NO }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers where !isContentLength(name) {
            if requestId != nil && name == "X-Request-Id" { continue }
            _ = MHD_add_response_header(mhdResponse, name, value)
        }
        if let requestId { _ = MHD_add_response_header(mhdResponse, "X-Request-Id", requestId) }
        if context.stopping.load(ordering: .relaxed) {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(clamping: response.status), mhdResponse)
    }

    private static func isContentLength(_ name: String) -> Bool {
        name.utf8.count == 14 && name.lowercased() == "content-length"
    }
}
