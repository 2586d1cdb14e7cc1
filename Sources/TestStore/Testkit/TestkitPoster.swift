import Dispatch
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One JSON POST to the running service, answered synchronously (the CLI does nothing else meanwhile).
enum TestkitPoster {
    struct Answer {
        var status: Int
        var body: String
    }

    private final class Box: @unchecked Sendable {
        var outcome: Result<Answer, TestkitError> = .failure(.init("no answer"))
    }

    static func post(_ body: [UInt8], to url: URL, key: String?, timeout: Double = 30) throws(TestkitError) -> Answer {
        var request = URLRequest(url: url, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        if let key { request.setValue("Bearer \(key)", forHTTPHeaderField: "Authorization") }
        request.httpBody = Data(body)
        let box = Box()
        let done = DispatchSemaphore(value: 0)
        let session = URLSession(configuration: .ephemeral)
        defer { session.finishTasksAndInvalidate() }
        let task = session.dataTask(with: request) { data, response, error in
            if let error {
                box.outcome = .failure(
                    TestkitError("cannot reach \(url.absoluteString): \(error.localizedDescription)"))
            } else if let http = response as? HTTPURLResponse {
                box.outcome = .success(
                    Answer(status: http.statusCode, body: String(decoding: data ?? Data(), as: UTF8.self)))
            }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout + 5) == .timedOut {
            task.cancel()
            throw TestkitError("\(url.absoluteString) did not answer within \(Int(timeout)) s")
        }
        return try box.outcome.get()
    }
}
