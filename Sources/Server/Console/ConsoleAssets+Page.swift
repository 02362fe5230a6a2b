// The page: its HTML, its style sheet and its icon.
// Plain text served as is by ConsoleRoutes; see ConsoleAssets.swift for the file list.

extension ConsoleAssets {
    /// `/console/index.html`
    static let indexHTML = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>stage-compositor console</title>
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/console.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<a class="skip" href="#compositions">Skip to compositions</a>
<header class="bar">
  <h1><img src="/console/icon.svg" alt="" width="24" height="24"> stage-compositor <span class="muted">console</span></h1>
  <div class="who">
    <span id="who-text">Connecting…</span>
    <button type="button" id="sign-in-button" hidden>Sign in</button>
    <button type="button" id="sign-out-button" hidden>Sign out</button>
    <button type="button" id="pause-button" aria-pressed="false">Pause updates</button>
  </div>
</header>
<p id="status" class="status" role="status" aria-live="polite"></p>

<section id="sign-in" class="sign-in panel" hidden aria-labelledby="sign-in-title">
  <h2 id="sign-in-title">Sign in</h2>
  <p id="sign-in-reason">This daemon accepts only signed API requests (<code>auth.enabled</code>).</p>
  <p class="muted">The page signs each call with AWS Signature Version 4 in this browser: the secret is never
    sent. The key stays in this tab (sessionStorage) until you sign out or close it.</p>
  <form id="sign-in-form" autocomplete="on">
    <label for="access-key-id">Access key ID</label>
    <input id="access-key-id" name="accessKeyId" autocomplete="username" spellcheck="false" autocapitalize="off" required>
    <label for="secret-access-key">Secret access key</label>
    <input id="secret-access-key" name="secretAccessKey" type="password" autocomplete="current-password" required>
    <label for="region">Region</label>
    <input id="region" name="region" value="us-east-1" spellcheck="false" autocapitalize="off" required
           pattern="[a-z0-9]+(-[a-z0-9]+)*" title="an AWS region name, e.g. us-east-1">
    <div class="actions"><button type="submit" class="primary">Sign in</button>
      <button type="button" id="sign-in-cancel">Cancel</button></div>
  </form>
</section>

<main id="main" class="columns">
  <section id="stages" class="panel" aria-labelledby="stages-title">
    <h2 id="stages-title">Stages</h2>
    <p id="stages-empty" class="muted" hidden>No stages.</p>
    <ul id="stage-list" class="stage-list"></ul>
    <div id="stage-detail" class="stage-detail" hidden>
      <h3 id="stage-detail-title"></h3>
      <dl id="stage-facts" class="facts"></dl>
      <details class="endpoints">
        <summary>Endpoints and ARN</summary>
        <dl id="stage-endpoints" class="facts"></dl>
      </details>
      <div class="toolbar">
        <label for="participant-filter">Participants</label>
        <select id="participant-filter">
          <option value="CONNECTED">Connected</option>
          <option value="DISCONNECTED">Disconnected</option>
          <option value="">All of the session</option>
        </select>
      </div>
      <p id="participants-empty" class="muted" hidden></p>
      <table id="participants" class="participants">
        <caption class="visually-hidden">Participants of the selected stage</caption>
        <thead><tr><th scope="col">Participant</th><th scope="col">State</th><th scope="col">Transport</th>
          <th scope="col">Attributes</th><th scope="col">Joined</th></tr></thead>
        <tbody id="participant-rows"></tbody>
      </table>
      <h3 id="events-title">Events <span class="muted">(newest first)</span></h3>
      <p id="events-empty" class="muted" hidden>No events yet.</p>
      <ol id="events" class="events" aria-labelledby="events-title" tabindex="0"></ol>
    </div>
  </section>

  <section id="compositions" class="panel" aria-labelledby="compositions-title" tabindex="-1">
    <h2 id="compositions-title">Compositions</h2>
    <p id="compositions-empty" class="muted" hidden>No compositions.</p>
    <ul id="composition-list" class="composition-list"></ul>
  </section>
</main>
<footer class="foot muted">Updated every 2 s from the IVS API of this daemon. <span id="last-update"></span></footer>
</body>
</html>
"""#

    /// `/console/console.css`
    static let consoleCSS = #"""
/* The operator console: one dark theme, readable at 1280x720 and on a 375 px phone. */
:root {
  --bg: #0f151c;
  --panel: #16202c;
  --raised: #1e2b3a;
  --line: #2c3c4f;
  --text: #e8eef5;
  --muted: #9fb0c2;
  --accent: #4fa3ff;
  --focus: #ffbf47;
  --ok: #59d18c;
  --warn: #ffbf47;
  --bad: #ff6b6b;
  color-scheme: dark;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", "DejaVu Sans", sans-serif;
}
* { box-sizing: border-box; }
html, body { margin: 0; background: var(--bg); color: var(--text); }
body { min-width: 0; overflow-wrap: anywhere; }
h1, h2, h3, h4 { margin: 0 0 .5rem; line-height: 1.25; }
h1 { font-size: 1.15rem; display: flex; align-items: center; gap: .5rem; }
h2 { font-size: 1.05rem; }
h3 { font-size: .98rem; margin-top: 1rem; }
h4 { font-size: .9rem; margin-top: .75rem; color: var(--muted); font-weight: 600; }
code, .mono { font-family: ui-monospace, "DejaVu Sans Mono", Menlo, monospace; font-size: .88em; word-break: break-all; }
.muted { color: var(--muted); font-weight: normal; }
.visually-hidden { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }
[hidden] { display: none !important; }

.skip { position: absolute; left: -999px; top: 0; background: var(--focus); color: #000; padding: .5rem 1rem; z-index: 10; }
.skip:focus { left: .5rem; }
:focus-visible { outline: 3px solid var(--focus); outline-offset: 2px; }

.bar { display: flex; flex-wrap: wrap; align-items: center; justify-content: space-between; gap: .5rem 1rem;
       padding: .6rem 1rem; background: var(--panel); border-bottom: 1px solid var(--line); }
.who { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; }
.status { margin: 0; padding: .4rem 1rem; min-height: 2.1rem; border-bottom: 1px solid var(--line); }
.status.error { background: #3a1d22; color: #ffd9d9; }
.status.ok { background: #17301f; color: #d6f5e1; }

button, select, input {
  font: inherit; color: var(--text); background: var(--raised); border: 1px solid var(--line);
  border-radius: 6px; padding: .35rem .75rem; min-height: 2.1rem;
}
button { cursor: pointer; }
button:hover:not(:disabled) { border-color: var(--accent); }
button:disabled { opacity: .5; cursor: not-allowed; }
button[aria-pressed="true"] { background: var(--accent); border-color: var(--accent); color: #04121f; font-weight: 600; }
button.primary { background: var(--accent); color: #04121f; border-color: var(--accent); font-weight: 600; }
button.danger { border-color: #7a2e35; color: #ffc9c9; }
button.danger:hover:not(:disabled) { border-color: var(--bad); }
button[aria-busy="true"] { cursor: progress; }
@media (pointer: coarse) { button, select, input { min-height: 2.75rem; } }

.columns { display: grid; grid-template-columns: minmax(0, 5fr) minmax(0, 6fr); gap: 1rem; padding: 1rem; align-items: start; }
@media (max-width: 1000px) { .columns { grid-template-columns: minmax(0, 1fr); padding: .5rem; gap: .5rem; } }
.panel { background: var(--panel); border: 1px solid var(--line); border-radius: 10px; padding: 1rem; min-width: 0; }
@media (max-width: 480px) { .panel { padding: .75rem; } }

.sign-in { max-width: 30rem; margin: 1rem auto; }
.sign-in form { display: grid; gap: .35rem; }
.sign-in input { width: 100%; }
.sign-in label { margin-top: .4rem; font-weight: 600; }
.actions { display: flex; flex-wrap: wrap; gap: .5rem; margin-top: .75rem; }

.stage-list, .composition-list, .destinations, .mix, .events { list-style: none; margin: 0; padding: 0; }
.stage-list { display: grid; gap: .3rem; }
.stage-list button { width: 100%; text-align: left; display: flex; flex-wrap: wrap; gap: .25rem .75rem; align-items: baseline; }
.stage-list .name { font-weight: 600; }
.stage-list button[aria-pressed="true"] .muted { color: #10253a; }

.stage-detail { margin-top: 1rem; border-top: 1px solid var(--line); padding-top: .5rem; }
.facts { display: grid; grid-template-columns: max-content minmax(0, 1fr); gap: .2rem .75rem; margin: 0 0 .5rem; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; min-width: 0; }
.toolbar { display: flex; flex-wrap: wrap; align-items: center; gap: .5rem; margin: .5rem 0; }

.participants { width: 100%; border-collapse: collapse; font-size: .92rem; }
.participants th, .participants td { text-align: left; padding: .35rem .4rem; border-bottom: 1px solid var(--line); vertical-align: top; }
.participants th { color: var(--muted); font-weight: 600; }
time { white-space: nowrap; }
.participants th, .participants code { overflow-wrap: normal; word-break: normal; }
.attributes { display: flex; flex-wrap: wrap; gap: .25rem; }
.chip { display: inline-block; background: var(--raised); border: 1px solid var(--line); border-radius: 999px; padding: 0 .5rem; font-size: .85em; }
@media (max-width: 700px) {
  .participants thead { position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); }
  .participants, .participants tbody, .participants tr, .participants td { display: block; width: 100%; }
  .participants tr { border: 1px solid var(--line); border-radius: 8px; margin-bottom: .5rem; padding: .25rem .5rem; }
  .participants td { border: 0; display: grid; grid-template-columns: 5.5rem minmax(0, 1fr); gap: .5rem; padding: .2rem 0; }
  .participants td > div { min-width: 0; }
  .participants td::before { content: attr(data-label); color: var(--muted); }
}

.badge { display: inline-block; border-radius: 4px; padding: 0 .4rem; font-size: .8rem; font-weight: 700; letter-spacing: .02em;
         border: 1px solid currentColor; white-space: nowrap; }
.badge.good { color: var(--ok); }
.badge.warn { color: var(--warn); }
.badge.bad { color: var(--bad); }
.badge.idle { color: var(--muted); }

.events { max-height: 22rem; overflow-y: auto; border: 1px solid var(--line); border-radius: 8px; }
.events li { display: grid; grid-template-columns: 5.5rem minmax(0, 1fr); gap: .5rem; padding: .3rem .5rem; border-bottom: 1px solid var(--line); font-size: .9rem; }
.events li:last-child { border-bottom: 0; }
.events li.fresh { background: #1c3350; }
.events .event-name { font-weight: 600; }

.composition-list { display: grid; gap: 1rem; }
.composition { background: var(--raised); border: 1px solid var(--line); border-radius: 10px; padding: .75rem; min-width: 0;
               container-type: inline-size; }
.composition-body { display: grid; grid-template-columns: minmax(0, 1fr); gap: .5rem .9rem; margin-top: .5rem; }
@container (min-width: 560px) { .composition-body { grid-template-columns: minmax(0, 11fr) minmax(0, 9fr); } }
.composition-info h4:first-of-type { margin-top: .25rem; }
.composition .actions { margin-top: .5rem; }
.composition [data-action="stop"] { margin-left: auto; }
.note { font-size: .82rem; margin: .4rem 0 0; }
details.endpoints { margin: 0 0 .5rem; }
details.endpoints summary { cursor: pointer; color: var(--muted); padding: .2rem 0; }
details.endpoints .facts { margin-top: .25rem; }
.composition > header { display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; justify-content: space-between; }
.composition h3 { margin: 0; }
.composition .facts { margin: 0; }
.destinations li { display: flex; flex-wrap: wrap; gap: .25rem .5rem; align-items: baseline; padding: .15rem 0; }
.player { margin: 0; }
.player video { display: block; width: 100%; aspect-ratio: 16 / 9; background: #000; border-radius: 6px; }
.player .player-row { display: flex; flex-wrap: wrap; gap: .5rem; align-items: center; margin-top: .4rem; }
.mix li { display: flex; flex-wrap: wrap; gap: .35rem .5rem; align-items: center; justify-content: space-between; padding: .3rem 0;
          border-bottom: 1px solid var(--line); }
.mix li:last-child { border-bottom: 0; }
.mix .who-in-mix { min-width: 0; flex: 1 1 10rem; }
.mix .buttons { display: flex; flex-wrap: wrap; gap: .35rem; }
.foot { padding: .5rem 1rem 1.5rem; font-size: .85rem; }
"""#

    /// `/console/icon.svg`
    static let iconSVG = #"""
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#16202c"/><rect x="5" y="7" width="13" height="18" rx="2" fill="#4fa3ff"/><rect x="20" y="7" width="7" height="8" rx="2" fill="#ffbf47"/><rect x="20" y="17" width="7" height="8" rx="2" fill="#59d18c"/></svg>
"""#
}
