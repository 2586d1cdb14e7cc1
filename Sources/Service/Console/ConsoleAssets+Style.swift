extension ConsoleAssets {
    /// One stylesheet: readable at 1280×800 and at a phone's 390 px, visible focus, colour only
    /// repeating what the badge text says.
    static let css = #"""
        :root { --fg: #111827; --muted: #4b5563; --bg: #f3f4f6; --card: #fff; --line: #d1d5db; --accent: #1d4ed8;
          --ok: #065f46; --ok-bg: #d1fae5; --warn: #78350f; --warn-bg: #fef3c7; --bad: #7f1d1d; --bad-bg: #fee2e2;
          --off: #374151; --off-bg: #e5e7eb; --info: #1e3a8a; --info-bg: #dbeafe; color-scheme: light; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
        code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.9em; overflow-wrap: anywhere; }
        .top { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem 1.5rem; padding: 0.6rem 1rem; background: #111827; color: #fff; }
        .brand { font-weight: 700; letter-spacing: 0.02em; }
        .top nav { display: flex; gap: 0.25rem; flex-wrap: wrap; }
        .top nav a { color: #e5e7eb; text-decoration: none; padding: 0.3rem 0.6rem; border-radius: 4px; }
        .top nav a[aria-current="page"] { background: #374151; color: #fff; font-weight: 600; }
        .top nav a:hover { text-decoration: underline; }
        #logout { margin-left: auto; }
        main, .login { max-width: 1200px; margin: 0 auto; padding: 1rem; }
        main:focus { outline: none; }
        h1 { font-size: 1.4rem; margin: 0.4rem 0 0.8rem; }
        h2 { font-size: 1.1rem; margin: 0 0 0.6rem; }
        h3 { font-size: 1rem; margin: 0.8rem 0 0.4rem; }
        .card { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 0.9rem 1rem; margin: 0 0 1rem; }
        .head h1 { margin: 0; }
        .muted { color: var(--muted); }
        .empty { color: var(--muted); font-style: italic; }
        .error, .error-box { color: var(--bad); }
        .error-box { background: var(--bad-bg); border: 1px solid #fca5a5; border-radius: 6px; padding: 0.6rem 0.8rem; margin: 0.5rem 0; overflow-wrap: anywhere; }
        .notice { background: var(--warn-bg); color: var(--warn); padding: 0.6rem 1rem; }
        .unconfigured ul { margin: 0.3rem 0 0; padding-left: 1.2rem; }
        .loading { color: var(--muted); }
        .loading::before { content: "⏳ "; }
        .login form { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 1rem; max-width: 32rem; }
        .login input { width: 100%; margin: 0.3rem 0 0.8rem; }
        label { font-weight: 600; display: block; font-size: 0.9rem; }
        input, select, button { font: inherit; padding: 0.4rem 0.6rem; border-radius: 6px; border: 1px solid #9ca3af; }
        input, select { background: #fff; color: var(--fg); min-width: 0; }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.secondary { background: #fff; color: var(--accent); }
        button.danger { background: #fff; color: var(--bad); border-color: var(--bad); }
        button:disabled { opacity: 0.55; cursor: default; }
        :focus-visible { outline: 3px solid #f59e0b; outline-offset: 2px; }
        .lookup, .grant-form { display: flex; flex-wrap: wrap; gap: 0.6rem 1rem; align-items: flex-end; margin: 0 0 1rem; }
        .lookup .field, .grant-form .field { display: flex; flex-direction: column; flex: 1 1 12rem; }
        .lookup .error, .grant-form [role="status"] { flex-basis: 100%; margin: 0; }
        .lookup .match { flex-basis: 100%; margin: 0; overflow-wrap: anywhere; }
        .buttons { display: flex; gap: 0.5rem; flex-wrap: wrap; }
        .table-wrap { overflow-x: auto; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: 0.35rem 0.5rem; border-bottom: 1px solid var(--line); vertical-align: top; overflow-wrap: anywhere; }
        th { font-size: 0.85rem; color: var(--muted); font-weight: 600; }
        .badge { display: inline-block; padding: 0.05rem 0.5rem; border-radius: 999px; font-size: 0.8rem; font-weight: 700;
          border: 1px solid currentColor; white-space: nowrap; }
        .badge-ok { color: var(--ok); background: var(--ok-bg); }
        .badge-warn { color: var(--warn); background: var(--warn-bg); }
        .badge-bad { color: var(--bad); background: var(--bad-bg); }
        .badge-off { color: var(--off); background: var(--off-bg); }
        .badge-info { color: var(--info); background: var(--info-bg); }
        .as-of { background: var(--warn-bg); padding: 0.4rem 0.6rem; border-radius: 6px; }
        .timeline { list-style: none; padding: 0; margin: 0; }
        .timeline li { border-bottom: 1px solid var(--line); }
        details > summary { cursor: pointer; padding: 0.35rem 0; }
        .json { background: #f9fafb; border: 1px solid var(--line); border-radius: 6px; padding: 0.6rem; max-height: 28rem; overflow: auto; white-space: pre-wrap; margin: 0.3rem 0 0.6rem; }
        td .json { max-height: 12rem; }
        .chart { width: 100%; height: auto; max-height: 260px; }
        .chart text { font-size: 11px; fill: var(--muted); }
        .chart .grid { stroke: #e5e7eb; }
        .series-0 { color: #1d4ed8; } .series-1 { color: #b45309; } .series-2 { color: #7f1d1d; }
        .chart .series polyline { stroke: currentColor; stroke-width: 2; }
        .chart .series circle, .chart .series rect { fill: currentColor; }
        .legend .swatch { display: inline-block; width: 0.8rem; height: 0.8rem; background: currentColor; vertical-align: middle; }
        .endpoint { border-top: 1px solid var(--line); padding-top: 0.5rem; }
        .sr-only { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
        @media (max-width: 600px) {
          body { font-size: 14px; }
          main { padding: 0.6rem; }
          .card { padding: 0.7rem; }
          th, td { padding: 0.3rem; }
          .top { gap: 0.4rem 0.8rem; }
        }
        """#
}
