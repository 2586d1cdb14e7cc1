import Foundation
import Glibc
import JSON

/// A small W3C WebDriver client: plain HTTP and JSON against a chromedriver this
/// process starts on a free 127.0.0.1 port, driving a headless Chromium. Enough for the
/// console's browser tests: navigate, find, click, type, read text, run a script, screenshots
/// and the browser's log.
public final class WebDriver: @unchecked Sendable {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(_ description: String) { self.description = description }
    }

    /// A WebDriver element reference.
    public struct Element: Sendable {
        public let id: String
    }

    private let driver: Process
    private let port: Int
    private let session: String

    /// Starts chromedriver and one headless Chromium session. `hostResolverRules` keeps every
    /// name but 127.0.0.1 unresolvable, so nothing the page asks for can leave the machine.
    public init(
        windowWidth: Int = 1280, windowHeight: Int = 800, chromedriver: String = "/usr/bin/chromedriver",
        chromium: String = "/usr/bin/chromium"
    ) throws {
        guard FileManager.default.isExecutableFile(atPath: chromedriver) else {
            throw Failure("\(chromedriver) is missing: `make browser` installs chromium and chromium-driver")
        }
        let port = try FreePorts.consecutive()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: chromedriver)
        process.arguments = ["--port=\(port)", "--allowed-ips=127.0.0.1", "--log-level=SEVERE"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        driver = process
        self.port = port
        // chromedriver answers /status once it listens: bounded, so a broken install fails the test.
        var last = ""
        do {
            try eventually("chromedriver to become ready on port \(port): \(last)", within: 10, every: 0.1) {
                let status = try Self.request(port, "GET", "/status", nil)
                last = String(decoding: status.serialized(), as: UTF8.self)
                return status["value"]?["ready"]?.boolValue == true
            }
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw Failure("\(error)")
        }
        let arguments: [JSONValue] = [
            "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
            "--window-size=\(windowWidth),\(windowHeight)", "--no-first-run", "--no-default-browser-check",
            "--disable-extensions", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--metrics-recording-only", "--no-pings", "--disable-default-apps",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
        ].map { .string($0) }
        let capabilities: JSONValue = .object([
            "capabilities": .object([
                "alwaysMatch": .object([
                    "browserName": "chrome",
                    "goog:chromeOptions": .object(["binary": .string(chromium), "args": .array(arguments)]),
                    "goog:loggingPrefs": .object(["browser": "ALL", "performance": "ALL"]),
                    "unhandledPromptBehavior": "ignore",
                ])
            ])
        ])
        do {
            let answer = try Self.request(port, "POST", "/session", capabilities)
            guard let id = answer["value"]?["sessionId"]?.stringValue else {
                throw Failure("no session: \(String(decoding: answer.serialized(), as: UTF8.self))")
            }
            session = id
        } catch {
            kill(process.processIdentifier, SIGKILL)
            throw error
        }
    }

    /// Ends the session (the browser exits) and stops chromedriver.
    public func quit() {
        _ = try? command("DELETE", "")
        // chromedriver does not always exit on SIGTERM; the session (and its browser) is gone already.
        kill(driver.processIdentifier, SIGKILL)
        driver.waitUntilExit()
    }

    // MARK: commands

    @discardableResult
    public func command(_ method: String, _ path: String, _ body: JSONValue? = nil) throws -> JSONValue {
        // A POST always carries an object; any other method none (not JSON null: chromedriver refuses a non-object body).
        let payload: JSONValue? = method == "POST" ? (body ?? .object([:])) : body
        let answer = try Self.request(port, method, "/session/\(session)\(path)", payload)
        if let error = answer["value"]?["error"]?.stringValue {
            throw Failure("\(method) \(path): \(error): \(answer["value"]?["message"]?.stringValue ?? "")")
        }
        return answer["value"] ?? .null
    }

    public func navigate(_ url: String) throws { try command("POST", "/url", .object(["url": .string(url)])) }

    public func find(_ css: String) throws -> Element {
        let value = try command("POST", "/element", .object(["using": "css selector", "value": .string(css)]))
        guard let id = value.objectValue?.values.first?.stringValue else { throw Failure("no element id for \(css)") }
        return Element(id: id)
    }

    public func findAll(_ css: String) throws -> [Element] {
        let value = try command("POST", "/elements", .object(["using": "css selector", "value": .string(css)]))
        return (value.arrayValue ?? []).compactMap { $0.objectValue?.values.first?.stringValue }.map(Element.init)
    }

    public func click(_ element: Element) throws { try command("POST", "/element/\(element.id)/click") }

    public func clear(_ element: Element) throws { try command("POST", "/element/\(element.id)/clear") }

    public func type(_ element: Element, _ text: String) throws {
        try command("POST", "/element/\(element.id)/value", .object(["text": .string(text)]))
    }

    public func text(_ element: Element) throws -> String {
        try command("GET", "/element/\(element.id)/text").stringValue ?? ""
    }

    public func attribute(_ element: Element, _ name: String) throws -> String? {
        try command("GET", "/element/\(element.id)/attribute/\(name)").stringValue
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page and returns its value.
    @discardableResult
    public func execute(_ script: String, _ args: [JSONValue] = []) throws -> JSONValue {
        try command("POST", "/execute/sync", .object(["script": .string(script), "args": .array(args)]))
    }

    public func setWindowSize(width: Int, height: Int) throws {
        try command(
            "POST", "/window/rect", .object(["width": .number(String(width)), "height": .number(String(height))]))
    }

    /// The text of an open alert/confirm/prompt, or nil when none is open.
    public func alertText() -> String? {
        try? command("GET", "/alert/text").stringValue
    }

    /// A PNG of the viewport.
    public func screenshot() throws -> Data {
        guard let base64 = try command("GET", "/screenshot").stringValue, let png = Data(base64Encoded: base64) else {
            throw Failure("screenshot: no PNG")
        }
        return png
    }

    /// Entries of chromedriver's log of `type` ("browser", "performance") since the last call.
    public func log(_ type: String) throws -> [JSONValue] {
        try command("POST", "/se/log", .object(["type": .string(type)])).arrayValue ?? []
    }

    /// Waits until `css` matches an element whose text contains `text`, and returns that text.
    @discardableResult
    public func waitForText(_ css: String, containing text: String, seconds: Double = 20) throws -> String {
        var seen = ""
        do {
            try eventually("\(css) to contain \"\(text)\"", within: seconds, every: 0.05) {
                seen = try findAll(css).map { try self.text($0) }.joined(separator: "\n")
                return seen.contains(text)
            }
        } catch {
            // What the page showed last, not what it showed before the first look.
            throw Failure("\(error) (saw \"\(seen)\")")
        }
        return seen
    }

    // MARK: transport

    /// One exchange on a fresh 127.0.0.1 connection. Not URLSession: chromedriver writes its
    /// headers without a space after the colon (`Content-Length:251`), which
    /// swift-corelibs-foundation's curl bridge rejects ("Failed writing header").
    private static func request(_ port: Int, _ method: String, _ path: String, _ body: JSONValue?) throws -> JSONValue {
        let connection = try HTTPTestConnection(port: port, receiveTimeout: 120)
        var headers = ["Connection": "close"]
        if body != nil { headers["Content-Type"] = "application/json; charset=utf-8" }
        let response = try connection.request(method, path, headers: headers, body: body?.serialized())
        return response.json
    }
}
