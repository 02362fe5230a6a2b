// The page's modules: the state and its updates (app.js), what is drawn (views.js), DOM helpers (dom.js).
// Plain text served as is by ConsoleRoutes; see ConsoleAssets.swift for the file list.

extension ConsoleAssets {
    /// `/console/app.js`
    static let appJS = #"""
// The operator console: every 2 s it reads the stages, their participants and events, and the
// compositions from this daemon's IVS API (the calls any IVS client makes, signed with the
// operator's key when authentication is on), and directs a running composition through
// UpdateComposition (layout, mute), UpdateParticipant (the featured attribute) and
// StopComposition. Updates never overlap; an action is followed by an update at once.
import { IVSError, call, listAll, session } from '/console/api.js';
import { clock, idOf } from '/console/dom.js';
import { WHEPPlayer } from '/console/player.js';
import { canSign } from '/console/sigv4.js';
import { SHARED_LAYOUT_FIELDS, featureAttribute, isRunning, layoutFields, layoutKind, renderCompositions, renderStages,
  rosterKey, tickDurations } from '/console/views.js';

const UPDATE_MS = 2000;
const PARTICIPANT_DETAILS = 24; // GetParticipant calls per stage and update, at most
const EVENT_PARTICIPANTS = 20; // ListParticipantEvents calls per update, at most
const EVENTS_SHOWN = 100;
const CONCURRENCY = 6;
const SELECTED_STAGE = 'stage-compositor.console.stage';

const $ = (id) => document.getElementById(id);

const state = {
  stages: [],
  selectedStageArn: sessionStorage.getItem(SELECTED_STAGE),
  stageDetail: null,
  participantFilter: 'CONNECTED',
  /** rosterKey(stage, filter) → {sessionId, list: [GetParticipant's participant]} */
  participants: new Map(),
  compositions: new Map(),
  compositionOrder: [],
  events: [],
  eventsSession: null,
  seenEvents: new Set(),
  laggedFrames: new Map(),
  /** `${arn} ${participantId}` → muted, as this console set it (GetComposition does not say). */
  muted: new Map(),
  /** composition ARN → {grid: fields, pip: fields} last seen, so a switch back keeps them. */
  layouts: new Map(),
  players: new Map(),
  busy: new Set(),
  paused: false,
  signInShown: false,
  connected: false,
};

// Status line

let statusTimer = null;
let statusFromUpdate = false;

function say(message, tone = '', { fromUpdate = false } = {}) {
  const line = $('status');
  line.textContent = message;
  line.className = `status ${tone}`;
  statusFromUpdate = fromUpdate;
  clearTimeout(statusTimer);
  if (tone === 'ok') statusTimer = setTimeout(() => say(''), 8000);
}

// Updates

let wakeUp = null;
let again = false;

function nap(ms) {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      wakeUp = null;
      resolve();
    }
    wakeUp = done;
  });
}

/** An update as soon as the current one (if any) ends. */
function wake() {
  again = true;
  wakeUp?.();
}

async function pool(tasks, limit = CONCURRENCY) {
  const results = new Array(tasks.length);
  let next = 0;
  const worker = async () => {
    while (next < tasks.length) {
      const index = next;
      next += 1;
      results[index] = await tasks[index]();
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, worker));
  return results;
}

async function loop() {
  for (;;) {
    again = false;
    if (!state.paused && !state.signInShown && !document.hidden) {
      try {
        const problems = await update();
        state.connected = true;
        showWho();
        if (problems.length) {
          const more = problems.length > 1 ? ` (and ${problems.length - 1} more)` : '';
          say(`${summary(problems[0])}${more}`, 'error', { fromUpdate: true });
        } else if (statusFromUpdate) {
          say('');
        }
        $('last-update').textContent = `Last update ${clock(new Date())}.`;
      } catch (error) {
        failed(error);
      }
    }
    if (!again) await nap(UPDATE_MS);
  }
}

const summary = (error) => (error instanceof IVSError ? error.summary : String(error?.message ?? error));

function failed(error) {
  if (error instanceof IVSError && error.wantsSignature) {
    const refused = session.credentials;
    // A refused key is not kept: its ID and region are offered again, the secret is asked for.
    session.signOut();
    showSignIn(refused
      ? `The daemon refused the key: ${error.message}`
      : 'This daemon accepts only signed API requests (auth.enabled).', { forced: true, prefill: refused });
  } else {
    say(summary(error), 'error', { fromUpdate: true });
  }
}

/** One update of everything shown; returns the calls that failed (the page keeps what it had for them). */
async function update() {
  const problems = [];
  const attempt = async (work) => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof IVSError && error.wantsSignature) throw error;
      problems.push(error);
      return undefined;
    }
  };
  // A refusal of these two is a refusal of everything: it propagates to loop().
  const [stages, listed] = await Promise.all([listAll('ListStages', 'stages'), listAll('ListCompositions', 'compositions')]);
  stages.sort((a, b) => (a.name || '').localeCompare(b.name || '') || a.arn.localeCompare(b.arn));
  state.stages = stages;
  if (!stages.some((s) => s.arn === state.selectedStageArn)) {
    state.selectedStageArn = (stages.find((s) => s.activeSessionId) ?? stages[0])?.arn ?? null;
  }
  const selected = stages.find((s) => s.arn === state.selectedStageArn);

  // Compositions: running ones on every update, ended ones once.
  const rank = (c) => (isRunning(c) ? 0 : c.state === 'STOPPING' ? 1 : 2);
  listed.sort((a, b) => rank(a) - rank(b) || (b.startTime ?? '').localeCompare(a.startTime ?? ''));
  const listedArns = new Set(listed.map((c) => c.arn));
  for (const arn of [...state.compositions.keys()]) {
    if (!listedArns.has(arn)) {
      state.compositions.delete(arn);
      stopPlayer(arn);
    }
  }
  await pool(listed.map((item) => async () => {
    const known = state.compositions.get(item.arn);
    if (known?.layout && !isRunning(item) && known.state === item.state && item.state !== 'STOPPING') return;
    const answer = await attempt(() => call('GetComposition', { arn: item.arn }));
    if (answer?.composition) state.compositions.set(item.arn, answer.composition);
    else if (!known) state.compositions.set(item.arn, item);
  }));
  state.compositionOrder = listed.map((c) => c.arn);
  for (const [arn, composition] of state.compositions) {
    remember(arn, composition.layout);
    if (!isRunning(composition)) stopPlayer(arn);
  }

  // Participants: the selected stage's (by the filter) and the connected ones of every stage
  // a running composition shows.
  const wanted = new Map();
  if (selected?.activeSessionId) wanted.set(rosterKey(selected.arn, state.participantFilter), [selected, state.participantFilter]);
  for (const composition of state.compositions.values()) {
    const stage = stages.find((s) => s.arn === composition.stageArn);
    if (isRunning(composition) && stage?.activeSessionId) wanted.set(rosterKey(stage.arn, 'CONNECTED'), [stage, 'CONNECTED']);
  }
  const rosters = new Map();
  const [detail] = await Promise.all([
    selected ? attempt(() => call('GetStage', { arn: selected.arn })) : undefined,
    pool([...wanted].map(([key, [stage, filter]]) => async () => {
      const input = { stageArn: stage.arn, sessionId: stage.activeSessionId, ...(filter ? { filterByState: filter } : {}) };
      const list = await attempt(() => listAll('ListParticipants', 'participants', input, 1));
      if (!list) {
        const previous = state.participants.get(key);
        if (previous?.sessionId === stage.activeSessionId) rosters.set(key, previous);
        return;
      }
      const details = await pool(list.slice(0, PARTICIPANT_DETAILS).map((p) => async () => (await attempt(() => call('GetParticipant', {
        stageArn: stage.arn, sessionId: stage.activeSessionId, participantId: p.participantId })))?.participant ?? p));
      details.sort((a, b) => (a.firstJoinTime ?? '').localeCompare(b.firstJoinTime ?? '') || a.participantId.localeCompare(b.participantId));
      rosters.set(key, { sessionId: stage.activeSessionId, list: details });
    }), 3),
  ]);
  state.participants = rosters;
  state.stageDetail = detail?.stage ?? (state.stageDetail?.arn === selected?.arn ? state.stageDetail : null);

  // The selected stage's events, newest first.
  const roster = selected && rosters.get(rosterKey(selected.arn, state.participantFilter));
  if (!selected?.activeSessionId || state.eventsSession !== `${selected.arn} ${selected.activeSessionId}`) {
    state.events = [];
    state.seenEvents = new Set();
    state.eventsSession = selected?.activeSessionId ? `${selected.arn} ${selected.activeSessionId}` : null;
  }
  if (roster) {
    const lists = await pool(roster.list.slice(0, EVENT_PARTICIPANTS).map((p, index) => async () => {
      const events = await attempt(() => listAll('ListParticipantEvents', 'events', {
        stageArn: selected.arn, sessionId: selected.activeSessionId, participantId: p.participantId }, 1));
      return (events ?? []).map((event, order) => ({
        ...event, order, index, who: p.attributes?.name || p.userId || p.participantId,
        key: `${p.participantId} ${order}`,
      }));
    }));
    const firstLoad = state.seenEvents.size === 0;
    const merged = lists.flat().sort((a, b) => Date.parse(b.eventTime) - Date.parse(a.eventTime) || b.order - a.order
                                     || b.index - a.index).slice(0, EVENTS_SHOWN);
    for (const event of merged) {
      event.fresh = !firstLoad && !state.seenEvents.has(event.key);
      state.seenEvents.add(event.key);
    }
    state.events = merged;
  }

  await readLaggedFrames();
  render();
  return problems;
}

/** Lagged frames per running composition, from /metrics when it is open to this page. */
async function readLaggedFrames() {
  state.laggedFrames = new Map();
  if (![...state.compositions.values()].some(isRunning)) return;
  try {
    const response = await fetch('/metrics', { cache: 'no-store', credentials: 'omit' });
    if (!response.ok) return;
    const body = await response.text();
    for (const match of body.matchAll(/^stage_compositor_composition_lagged_frames\{composition_id="([^"]+)"\} (\S+)$/gm)) {
      state.laggedFrames.set(match[1], Number(match[2]));
    }
  } catch { /* not shown */ }
}

function remember(arn, layout) {
  if (!layout) return;
  const kept = state.layouts.get(arn) ?? {};
  kept[layoutKind(layout)] = { ...layoutFields(layout) };
  state.layouts.set(arn, kept);
}

const actions = {
  selectStage(arn) {
    state.selectedStageArn = arn;
    sessionStorage.setItem(SELECTED_STAGE, arn);
    state.stageDetail = null;
    render();
    wake();
  },

  setLayout(arn, kind) {
    const composition = state.compositions.get(arn);
    if (!composition || layoutKind(composition.layout) === kind) return;
    const name = kind === 'pip' ? 'PiP' : 'Grid';
    act(`${arn} layout`, `Layout ${name} for composition ${idOf(arn)}`, async () => {
      const current = layoutFields(composition.layout);
      const fields = { ...(state.layouts.get(arn)?.[kind] ?? {}) };
      for (const field of SHARED_LAYOUT_FIELDS) {
        if (current[field] === undefined) delete fields[field];
        else fields[field] = current[field];
      }
      // PiP shows someone in its window: it names an attribute for it ("pip" unless the layout
      // had one) and, when no connected participant carries it, gives it to the first who is not
      // featured (IVS's PiP with nobody flagged is the featured grid: the same picture).
      if (kind === 'pip') {
        fields.pipParticipantAttribute ??= 'pip';
        const people = state.participants.get(rosterKey(composition.stageArn, 'CONNECTED'))?.list ?? [];
        const flag = fields.pipParticipantAttribute, featured = featureAttribute(composition.layout);
        const chosen = people.length > 1 && !people.some((p) => p.attributes?.[flag] === 'true')
          ? people.find((p) => p.attributes?.[featured] !== 'true') : null;
        if (chosen) await setAttributes(composition.stageArn, chosen, { ...(chosen.attributes ?? {}), [flag]: 'true' });
      }
      const layout = { [kind]: fields };
      if (composition.layout?.transitionMs !== undefined) layout.transitionMs = composition.layout.transitionMs;
      const answer = await call('UpdateComposition', { arn, layout, transitionMs: 300 });
      if (answer.composition) state.compositions.set(arn, answer.composition);
    });
  },

  feature(arn, participantId) {
    const composition = state.compositions.get(arn);
    const roster = composition && state.participants.get(rosterKey(composition.stageArn, 'CONNECTED'));
    const target = roster?.list.find((p) => p.participantId === participantId);
    if (!target) return;
    const attribute = featureAttribute(composition.layout);
    const featured = target.attributes?.[attribute] === 'true';
    const name = target.attributes?.name || target.userId || participantId;
    act(`${arn} feature`, featured ? `${name} no longer featured` : `${name} featured`, async () => {
      if (!featured && !layoutFields(composition.layout).featuredParticipantAttribute) {
        const kind = layoutKind(composition.layout);
        const layout = { ...composition.layout, [kind]: { ...layoutFields(composition.layout), featuredParticipantAttribute: attribute } };
        const answer = await call('UpdateComposition', { arn, layout, transitionMs: 300 });
        if (answer.composition) state.compositions.set(arn, answer.composition);
      }
      const without = (p) => Object.fromEntries(Object.entries(p.attributes ?? {}).filter(([key]) => key !== attribute));
      if (!featured) {
        for (const other of roster.list) {
          if (other !== target && other.attributes?.[attribute] === 'true') await setAttributes(composition.stageArn, other, without(other));
        }
      }
      await setAttributes(composition.stageArn, target, featured ? without(target) : { ...without(target), [attribute]: 'true' });
    });
  },

  toggleMute(arn, participantId) {
    const key = `${arn} ${participantId}`;
    const muted = state.muted.get(key) !== true;
    const composition = state.compositions.get(arn);
    const participant = composition && state.participants.get(rosterKey(composition.stageArn, 'CONNECTED'))?.list
      .find((p) => p.participantId === participantId);
    const name = participant?.attributes?.name || participant?.userId || participantId;
    act(`${arn} mute ${participantId}`, `${name} ${muted ? 'muted' : 'unmuted'} in composition ${idOf(arn)}`, async () => {
      await call('UpdateComposition', { arn, audio: { [participantId]: { muted } } });
      state.muted.set(key, muted);
    });
  },

  stop(arn) {
    if (!window.confirm(`Stop composition ${idOf(arn)}? Its destinations end (as StopComposition).`)) return;
    act(`${arn} stop`, `Composition ${idOf(arn)} stopping`, async () => {
      stopPlayer(arn);
      await call('StopComposition', { arn });
    });
  },

  togglePlayer(arn) {
    const player = state.players.get(arn);
    if (player?.active) {
      player.stop();
      render();
      return;
    }
    const video = [...document.querySelectorAll('#composition-list > li')].find((li) => li.dataset.key === arn)?.querySelector('video');
    if (!video) return;
    const viewer = new WHEPPlayer(video, () => render());
    state.players.set(arn, viewer);
    viewer.start(idOf(arn));
  },
};

/** UpdateParticipant (a token exchange here): the participant's record takes the answer at once. */
async function setAttributes(stageArn, participant, attributes) {
  const answer = await call('UpdateParticipant', { stageArn, participantId: participant.participantId, attributes });
  Object.assign(participant, answer.participant ?? { attributes });
}

async function act(key, done, work) {
  if (state.busy.has(key)) return;
  state.busy.add(key);
  render();
  try {
    await work();
    say(`${done}.`, 'ok');
  } catch (error) {
    if (error instanceof IVSError && error.wantsSignature) failed(error);
    else say(summary(error), 'error');
  } finally {
    state.busy.delete(key);
    render();
    wake();
  }
}

function stopPlayer(arn) {
  const player = state.players.get(arn);
  if (player?.active) player.stop();
}

function render() {
  renderStages(state, actions);
  renderCompositions(state, actions);
}

// Sign-in

function showWho() {
  const signed = session.credentials;
  $('who-text').textContent = signed ? `Signed in as ${signed.accessKeyId} (${signed.region})`
    : state.signInShown ? 'Not signed in' : state.connected ? 'Unsigned calls (authentication off)' : 'Connecting…';
  $('sign-out-button').hidden = !signed;
  $('sign-in-button').hidden = Boolean(signed) || state.signInShown;
}

function showSignIn(reason, { forced = false, prefill = session.credentials } = {}) {
  state.signInShown = true;
  $('sign-in').hidden = false;
  $('main').hidden = true;
  $('sign-in-reason').textContent = reason;
  $('sign-in-cancel').hidden = forced;
  const form = $('sign-in-form');
  if (prefill) {
    form.accessKeyId.value = prefill.accessKeyId;
    form.region.value = prefill.region;
  }
  const secure = canSign();
  form.querySelector('button[type="submit"]').disabled = !secure;
  if (!secure) say('Signing needs a secure context: open the console over HTTPS (listen.tls) or on a loopback address.', 'error');
  showWho();
  form.accessKeyId.focus();
}

function hideSignIn() {
  state.signInShown = false;
  $('sign-in').hidden = true;
  $('main').hidden = false;
  showWho();
}

$('sign-in-form').addEventListener('submit', (event) => {
  event.preventDefault();
  const form = event.currentTarget;
  session.signIn({ accessKeyId: form.accessKeyId.value.trim(), secretAccessKey: form.secretAccessKey.value,
                   region: form.region.value.trim() });
  form.secretAccessKey.value = '';
  say('Signed in; reading the API…');
  hideSignIn();
  wake();
});
$('sign-in-cancel').addEventListener('click', () => hideSignIn());
$('sign-in-button').addEventListener('click', () => showSignIn('Sign in with an access key of this daemon (auth.accessKeys).'));
$('sign-out-button').addEventListener('click', () => {
  for (const arn of state.players.keys()) stopPlayer(arn);
  session.signOut();
  location.reload();
});
$('pause-button').addEventListener('click', (event) => {
  state.paused = !state.paused;
  event.currentTarget.setAttribute('aria-pressed', String(state.paused));
  event.currentTarget.textContent = state.paused ? 'Resume updates' : 'Pause updates';
  if (!state.paused) wake();
});
$('participant-filter').addEventListener('change', (event) => {
  state.participantFilter = event.currentTarget.value;
  render();
  wake();
});
document.addEventListener('visibilitychange', () => { if (!document.hidden) wake(); });
window.addEventListener('pagehide', () => {
  for (const player of state.players.values()) if (player.active) player.stop({ keepalive: true });
});
setInterval(tickDurations, 1000);

showWho();
loop();
"""#

    /// `/console/views.js`
    static let viewsJS = #"""
// What the page shows, drawn from the console's state (app.js) on every update: the stages, the
// selected stage's participants and events, and one card per composition with its player and
// its buttons. Elements are kept by key, so updates never move focus or restart a video.
import { attribute, badge, duration, h, idOf, replaceIfChanged, syncList, text, time } from '/console/dom.js';

const $ = (id) => document.getElementById(id);

/** The layout fields grid and PiP share: kept when the layout switches between them. */
export const SHARED_LAYOUT_FIELDS = ['featuredParticipantAttribute', 'featured', 'activeSpeakerHoldMs', 'activeSpeakerMinSpeechMs',
  'omitStoppedVideo', 'videoFillMode', 'gridGap', 'participantOrderAttribute'];

export const layoutKind = (layout) => (layout?.pip ? 'pip' : 'grid');
export const layoutFields = (layout) => layout?.pip ?? layout?.grid ?? {};
/** The attribute whose "true" features a participant in this layout ("featured" when it names none). */
export const featureAttribute = (layout) => layoutFields(layout).featuredParticipantAttribute ?? 'featured';
export const isRunning = (composition) => ['STARTING', 'ACTIVE'].includes(composition?.state);

export function renderStages(state, actions) {
  const stages = state.stages;
  $('stages-empty').hidden = stages.length > 0;
  syncList($('stage-list'), stages, (s) => s.arn, (stage) => {
    const button = h('button', { type: 'button', class: 'stage', 'aria-controls': 'stage-detail',
                                 onclick: () => actions.selectStage(stage.arn) },
      h('span', { class: 'name' }), h('span', { class: 'muted mono id' }), h('span', { class: 'session' }));
    return h('li', {}, button);
  }, (item, stage) => {
    const button = item.firstElementChild;
    attribute(button, 'aria-pressed', stage.arn === state.selectedStageArn ? 'true' : 'false');
    text(button.querySelector('.name'), stage.name || idOf(stage.arn));
    text(button.querySelector('.id'), idOf(stage.arn));
    text(button.querySelector('.session'), stage.activeSessionId ? `● live session ${stage.activeSessionId}` : 'no active session');
  });
  renderStageDetail(state);
}

function renderStageDetail(state) {
  const stage = state.stages.find((s) => s.arn === state.selectedStageArn);
  $('stage-detail').hidden = !stage;
  if (!stage) return;
  const detail = state.stageDetail?.arn === stage.arn ? state.stageDetail : stage;
  text($('stage-detail-title'), `Stage ${detail.name || idOf(detail.arn)}`);
  const endpoints = detail.endpoints ?? {};
  replaceIfChanged($('stage-facts'), () => [
    h('dt', {}, 'Session'), h('dd', {}, stage.activeSessionId ? h('code', {}, stage.activeSessionId) : 'none active'),
    ...Object.keys(detail.tags ?? {}).length
      ? [h('dt', {}, 'Tags'), h('dd', {}, attributesList(detail.tags))] : [],
  ]);
  replaceIfChanged($('stage-endpoints'), () => [
    h('dt', {}, 'ARN'), h('dd', {}, h('code', {}, detail.arn)),
    ...Object.entries(endpoints).filter(([, url]) => url).flatMap(([kind, url]) =>
      [h('dt', {}, kind.toUpperCase()), h('dd', {}, h('code', {}, url))]),
  ]);
  const roster = state.participants.get(rosterKey(stage.arn, state.participantFilter));
  const participants = stage.activeSessionId && roster?.sessionId === stage.activeSessionId ? roster.list : [];
  const empty = $('participants-empty');
  empty.hidden = participants.length > 0;
  text(empty, !stage.activeSessionId ? 'No active session: nobody is on this stage.'
    : roster ? 'No participants match.' : 'Loading participants…');
  $('participants').hidden = participants.length === 0;
  syncList($('participant-rows'), participants, (p) => p.participantId, () => h('tr', {},
    ['Participant', 'State', 'Transport', 'Attributes', 'Joined'].map((label) => h('td', { 'data-label': label }, h('div')))),
  (row, p) => {
    const cells = [...row.children].map((cell) => cell.firstElementChild);
    replaceIfChanged(cells[0], () => [h('strong', {}, p.userId || '(no user ID)'), h('br'), h('code', { class: 'muted' }, p.participantId)]);
    replaceIfChanged(cells[1], () => [badge(p.state), ' ', h('span', { class: 'muted' }, p.published ? 'published' : 'not published')]);
    text(cells[2], transport(p));
    replaceIfChanged(cells[3], () => attributesList(p.attributes));
    replaceIfChanged(cells[4], () => time(p.firstJoinTime));
  });
  renderEvents(state);
}

/** Protocol and what else the answer says of how the participant is connected. */
function transport(p) {
  const parts = [p.protocol && p.protocol !== 'UNKNOWN' ? p.protocol : null];
  if (p.redundantIngest) parts.push('redundant ingest');
  if (p.replicationType && p.replicationType !== 'NONE') {
    parts.push(`${p.replicationType.toLowerCase()}${p.replicationState ? ` (${p.replicationState})` : ''}`);
  }
  if (p.browserName) parts.push(`${p.browserName} ${p.browserVersion ?? ''}`.trim());
  if (p.osName) parts.push(`${p.osName} ${p.osVersion ?? ''}`.trim());
  if (p.sdkVersion) parts.push(`SDK ${p.sdkVersion}`);
  if (p.ispName) parts.push(p.ispName);
  if (p.ingestConfigurationArn) parts.push(`ingest ${idOf(p.ingestConfigurationArn)}`);
  if (p.recordingState && p.recordingState !== 'DISABLED') parts.push(`recording ${p.recordingState}`);
  return parts.filter(Boolean).join(' · ') || '—';
}

function attributesList(attributes) {
  const entries = Object.entries(attributes ?? {});
  if (!entries.length) return h('span', { class: 'muted' }, 'none');
  return h('span', { class: 'attributes' }, entries.map(([key, value]) => h('span', { class: 'chip' }, `${key}=${value}`)));
}

export const rosterKey = (stageArn, filter) => `${stageArn} ${filter}`;

function renderEvents(state) {
  const events = state.events;
  $('events-empty').hidden = events.length > 0;
  syncList($('events'), events, (e) => e.key, () => h('li', {}, h('span', { class: 'when' }), h('span', { class: 'what' })),
    (item, event) => {
      item.classList.toggle('fresh', event.fresh);
      replaceIfChanged(item.firstElementChild, () => time(event.eventTime));
      replaceIfChanged(item.lastElementChild, () => [
        h('span', { class: 'event-name' }, event.name), ' ', h('span', {}, event.who),
        ...eventDetails(event).map((d) => [' · ', h('span', { class: 'muted' }, d)]),
      ]);
    });
}

function eventDetails(event) {
  const details = [];
  if (event.errorCode) details.push(event.errorCode);
  if (event.remoteParticipantId) details.push(`remote ${event.remoteParticipantId}`);
  if (event.destinationStageArn) details.push(`to stage ${idOf(event.destinationStageArn)}`);
  if (event.replica) details.push('replica');
  if (event.newToken?.attributes) {
    details.push(`attributes ${Object.entries(event.newToken.attributes).map(([k, v]) => `${k}=${v}`).join(', ') || 'none'}`);
  }
  return details;
}

export function renderCompositions(state, actions) {
  const compositions = state.compositionOrder.map((arn) => state.compositions.get(arn)).filter(Boolean);
  $('compositions-empty').hidden = compositions.length > 0;
  syncList($('composition-list'), compositions, (c) => c.arn, (c) => compositionCard(c, actions),
    (card, c) => updateCard(card, c, state, actions));
}

function compositionCard(composition, actions) {
  const id = idOf(composition.arn);
  const video = h('video', { muted: true, autoplay: true, playsinline: true, controls: true,
                             'aria-label': `Live picture of composition ${id}` });
  video.muted = true;
  const card = h('li', { class: 'composition', 'aria-labelledby': `composition-${id}` },
    h('header', {},
      h('h3', { id: `composition-${id}` }, 'Composition ', h('code', {}, id)),
      h('span', { class: 'state' })),
    h('div', { class: 'composition-body' },
      h('div', { class: 'composition-media' },
        h('div', { class: 'player' }, video,
          h('div', { class: 'player-row' },
            h('button', { type: 'button', class: 'play', 'data-action': 'play', onclick: () => actions.togglePlayer(composition.arn) }, 'Play'),
            h('span', { class: 'player-status muted', role: 'status' }, 'Not playing'))),
        h('div', { class: 'actions', role: 'group', 'aria-label': `Layout of composition ${id}` },
          h('button', { type: 'button', 'data-action': 'grid', onclick: () => actions.setLayout(composition.arn, 'grid') }, 'Grid'),
          h('button', { type: 'button', 'data-action': 'pip', onclick: () => actions.setLayout(composition.arn, 'pip') }, 'PiP'),
          h('button', { type: 'button', class: 'danger', 'data-action': 'stop', onclick: () => actions.stop(composition.arn) },
            'Stop composition'))),
      h('div', { class: 'composition-info' },
        h('dl', { class: 'facts' }),
        h('h4', {}, 'Destinations'),
        h('ul', { class: 'destinations' }),
        h('h4', {}, 'Participants in the mix'),
        h('p', { class: 'mix-empty muted' }),
        h('ul', { class: 'mix' }),
        h('p', { class: 'note muted' }, 'Mute shows what this console set: GetComposition does not report it.'))));
  return card;
}

function updateCard(card, composition, state, actions) {
  const running = isRunning(composition);
  replaceIfChanged(card.querySelector('.state'), () => badge(composition.state));
  const stage = state.stages.find((s) => s.arn === composition.stageArn);
  const lagged = state.laggedFrames.get(idOf(composition.arn));
  replaceIfChanged(card.querySelector('.facts'), () => [
    h('dt', {}, 'Stage'), h('dd', {}, stage?.name ? `${stage.name} ` : '', h('code', {}, idOf(composition.stageArn))),
    h('dt', {}, 'Started'), h('dd', {}, time(composition.startTime)),
    h('dt', {}, 'Duration'), h('dd', {}, h('span', { class: 'duration', 'data-start': composition.startTime ?? '',
                                                   'data-end': composition.endTime ?? '' },
      composition.startTime ? duration(((composition.endTime ? Date.parse(composition.endTime) : Date.now())
                                        - Date.parse(composition.startTime)) / 1000) : '—')),
    ...composition.endTime ? [h('dt', {}, 'Ended'), h('dd', {}, time(composition.endTime))] : [],
    h('dt', {}, 'Layout'), h('dd', { class: 'layout' }, describeLayout(composition.layout)),
    h('dt', {}, 'Overlays'), h('dd', {}, describeOverlays(composition.overlays)),
    ...lagged !== undefined ? [h('dt', {}, 'Lagged frames'), h('dd', {}, String(lagged))] : [],
  ]);
  replaceIfChanged(card.querySelector('.destinations'), () => (composition.destinations ?? []).map((d) => h('li', {},
    badge(d.state), ' ', describeDestination(d),
    d.startTime ? [' ', h('span', { class: 'muted' }, 'since '), time(d.startTime)] : null)));

  const kind = layoutKind(composition.layout);
  for (const button of card.querySelectorAll('[data-action="grid"], [data-action="pip"]')) {
    attribute(button, 'aria-pressed', button.dataset.action === kind ? 'true' : 'false');
    button.disabled = !running || state.busy.has(`${composition.arn} layout`);
  }
  card.querySelector('[data-action="stop"]').disabled = !running || state.busy.has(`${composition.arn} stop`);

  const player = state.players.get(composition.arn);
  const play = card.querySelector('[data-action="play"]');
  text(play, player?.active ? 'Stop playback' : 'Play');
  play.disabled = !running && !player?.active;
  text(card.querySelector('.player-status'), player ? player.detail : running ? 'Not playing' : 'Ended');

  const roster = state.participants.get(rosterKey(composition.stageArn, 'CONNECTED'));
  const people = running && roster ? roster.list : [];
  const empty = card.querySelector('.mix-empty');
  empty.hidden = people.length > 0;
  text(empty, !running ? 'The composition has ended.' : roster ? 'Nobody is connected to its stage.' : 'Loading…');
  const attributeName = featureAttribute(composition.layout);
  syncList(card.querySelector('.mix'), people, (p) => p.participantId, (p) => h('li', {},
    h('span', { class: 'who-in-mix' }),
    h('span', { class: 'buttons' },
      h('button', { type: 'button', 'data-action': 'feature', onclick: () => actions.feature(composition.arn, p.participantId) }),
      h('button', { type: 'button', 'data-action': 'mute', onclick: () => actions.toggleMute(composition.arn, p.participantId) }))),
  (item, p) => {
    const name = p.attributes?.name || p.userId || p.participantId;
    replaceIfChanged(item.firstElementChild, () => [h('strong', {}, name), ' ', h('code', { class: 'muted' }, p.participantId)]);
    const featured = p.attributes?.[attributeName] === 'true';
    const [feature, mute] = item.querySelectorAll('button');
    text(feature, featured ? 'Featured' : 'Feature');
    attribute(feature, 'aria-pressed', featured ? 'true' : 'false');
    attribute(feature, 'aria-label', `${featured ? 'Stop featuring' : 'Feature'} ${name}`);
    feature.disabled = state.busy.has(`${composition.arn} feature`);
    const muted = state.muted.get(`${composition.arn} ${p.participantId}`) === true;
    text(mute, muted ? 'Unmute' : 'Mute');
    attribute(mute, 'aria-pressed', muted ? 'true' : 'false');
    attribute(mute, 'aria-label', `${muted ? 'Unmute' : 'Mute'} ${name} in the mix`);
    mute.disabled = state.busy.has(`${composition.arn} mute ${p.participantId}`);
  });
}

function describeLayout(layout) {
  const kind = layoutKind(layout);
  const fields = Object.entries(layoutFields(layout)).map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : v}`);
  if (layout?.transitionMs) fields.push(`transitionMs=${layout.transitionMs}`);
  return [h('strong', { 'data-layout': kind }, kind === 'pip' ? 'PiP' : 'Grid'),
    fields.length ? h('span', { class: 'muted' }, ` ${fields.join(', ')}`) : null];
}

function describeOverlays(overlays) {
  if (!overlays) return h('span', { class: 'muted' }, 'none');
  const parts = [];
  if (overlays.labels) parts.push(`labels (${overlays.labels.attribute ?? 'name'})`);
  if (overlays.images?.length) parts.push(`${overlays.images.length} image${overlays.images.length > 1 ? 's' : ''}`);
  if (overlays.background) parts.push('background');
  if (overlays.slate) parts.push('slate');
  for (const banner of overlays.banners ?? []) parts.push(`banner ${banner.id}${banner.visible === false ? ' (hidden)' : ''}`);
  return parts.length ? parts.join(', ') : h('span', { class: 'muted' }, 'none');
}

function describeDestination(destination) {
  const configuration = destination.configuration ?? {};
  const name = configuration.name ? `${configuration.name}: ` : '';
  if (configuration.channel) return [`${name}channel `, h('code', {}, idOf(configuration.channel.channelArn))];
  if (configuration.s3) {
    const prefix = destination.detail?.s3?.recordingPrefix;
    return [`${name}S3 recording`, prefix ? [' ', h('code', { class: 'muted' }, prefix)] : null];
  }
  return [name || 'destination ', h('code', {}, destination.id ?? '?')];
}

/** Durations of running compositions tick every second between updates. */
export function tickDurations() {
  for (const span of document.querySelectorAll('.duration[data-start]')) {
    if (!span.dataset.start || span.dataset.end) continue;
    text(span, duration((Date.now() - Date.parse(span.dataset.start)) / 1000));
  }
}
"""#

    /// `/console/dom.js`
    static let domJS = #"""
// Small DOM helpers. Everything the API returns goes in as text (textContent), never as HTML.
// Lists are kept by key across updates, so a focused button or a playing video stays put.

/** `h('button', {type: 'button', class: 'x', onclick}, 'text', child)` */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) element.addEventListener(name.slice(2), value);
    else if (name === 'class') element.className = value;
    else element.setAttribute(name, value === true ? '' : String(value));
  }
  element.append(...children.flat(Infinity).filter((child) => child !== null && child !== undefined && child !== false));
  return element;
}

/** Sets text only when it changed (no churn for assistive technology). */
export function text(element, value) {
  const next = value ?? '';
  if (element.textContent !== next) element.textContent = next;
}

export function attribute(element, name, value) {
  if (value === null || value === undefined || value === false) {
    if (element.hasAttribute(name)) element.removeAttribute(name);
  } else if (element.getAttribute(name) !== String(value)) {
    element.setAttribute(name, String(value));
  }
}

/** Replaces an element's children only when their text differs (small, non-interactive parts). */
export function replaceIfChanged(element, build) {
  const fresh = h('div', {}, build());
  if (fresh.innerHTML !== element.innerHTML) element.replaceChildren(...fresh.childNodes);
}

/**
 * Makes `container`'s children one per item, in order, reusing the element of each key:
 * `create(item)` makes a new one, `update(element, item)` refreshes it.
 */
export function syncList(container, items, keyOf, create, update) {
  const existing = new Map();
  for (const child of container.children) existing.set(child.dataset.key, child);
  let previous = null;
  for (const item of items) {
    const key = String(keyOf(item));
    let element = existing.get(key);
    if (element) existing.delete(key);
    else {
      element = create(item);
      element.dataset.key = key;
    }
    update(element, item);
    const expected = previous ? previous.nextElementSibling : container.firstElementChild;
    if (element !== expected) container.insertBefore(element, expected);
    previous = element;
  }
  for (const stale of existing.values()) stale.remove();
}

/** `<time>` for an ISO timestamp: the local time of day (HH:MM:SS), the full date in its title. */
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const date = new Date(iso);
  return h('time', { datetime: iso, title: date.toLocaleString() }, clock(date));
}

/** 15:11:20, local time. */
export const clock = (date) => date.toTimeString().slice(0, 8);

/** 0:05:07 for 307 s. */
export function duration(seconds) {
  const s = Math.max(0, Math.floor(seconds));
  return `${Math.floor(s / 3600)}:${String(Math.floor(s / 60) % 60).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
}

/** The last part of an ARN (its resource ID). */
export const idOf = (arn) => (arn ?? '').split('/').pop();

const GOOD = new Set(['ACTIVE', 'CONNECTED']);
const WARN = new Set(['STARTING', 'STOPPING', 'RECONNECTING']);
const BAD = new Set(['FAILED']);

export function badge(state) {
  const tone = GOOD.has(state) ? 'good' : WARN.has(state) ? 'warn' : BAD.has(state) ? 'bad' : 'idle';
  return h('span', { class: `badge ${tone}` }, state ?? '?');
}
"""#
}
