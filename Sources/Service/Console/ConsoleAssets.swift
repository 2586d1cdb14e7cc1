/// The console's static files (api.md §6), compiled into the binary so it works offline and
/// needs no build step: plain HTML, CSS and JavaScript modules. Nothing here is inline script
/// or style (the Content-Security-Policy forbids both), and the scripts build every node with
/// `textContent`, never `innerHTML`, so whatever the data holds is shown as text.
enum ConsoleAssets {
    /// Every script by its name under `/console/`; `app.js` imports the others.
    static let scripts: [(name: String, source: String)] = [
        ("app.js", app), ("dom.js", dom), ("api.js", api), ("customer.js", customer),
        ("customer-history.js", customerHistory), ("grants.js", grants), ("overview.js", overview),
        ("charts.js", charts), ("operations.js", operations), ("search.js", search),
    ]

    static let indexHTML = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>iap-ledger console</title>
        <link rel="icon" href="/console/favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/console/console.css">
        <script type="module" src="/console/app.js"></script>
        </head>
        <body>
        <header class="top">
          <span class="brand">iap-ledger</span>
          <nav aria-label="Pages">
            <a href="#/customer" data-page="customer">Customer</a>
            <a href="#/overview" data-page="overview">Overview</a>
            <a href="#/operations" data-page="operations">Operations</a>
          </nav>
          <button id="logout" type="button" hidden>Forget key</button>
        </header>
        <div id="notice" class="notice" role="alert" hidden></div>
        <div id="unconfigured" class="notice unconfigured" role="status" hidden></div>
        <section id="login" class="login" hidden aria-labelledby="login-title">
          <form id="login-form">
            <h1 id="login-title">Sign in</h1>
            <p>Enter an API key of this service. It is kept in this browser tab only (session storage) and sent
              with every call as <code>Authorization: Bearer</code>.</p>
            <label for="api-key">API key</label>
            <input id="api-key" name="api-key" type="password" autocomplete="off" spellcheck="false" required>
            <button type="submit">Use this key</button>
            <p id="login-error" class="error" role="alert"></p>
          </form>
        </section>
        <main id="main" tabindex="-1"><p class="loading" role="status">Loading the console…</p></main>
        <noscript><p class="error">The console needs JavaScript.</p></noscript>
        </body>
        </html>
        """#

    static let favicon = #"""
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d4ed8"/><path d="M4 4h2v8H4zM8 4h4v2H10v6H8z" fill="#fff"/></svg>
        """#
}
