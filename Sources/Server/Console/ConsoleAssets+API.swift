// The page's modules that talk to the daemon: the API and its errors (api.js), SigV4 (sigv4.js), the WHEP player (player.js).
// Plain text served as is by ConsoleRoutes; see ConsoleAssets.swift for the file list.

extension ConsoleAssets {
    /// `/console/api.js`
    static let apiJS = #"""
// The daemon's IVS API from the page: `POST /<Operation>` with a JSON body, signed with SigV4
// when the operator signed in (auth.enabled), unsigned otherwise (the daemon then takes only
// same-origin calls from a browser). Errors come back as IVSError: the `x-amzn-ErrorType` and
// the message of the IVS error shape.
import { canSign, sign } from '/console/sigv4.js';

const CREDENTIALS = 'stage-compositor.console.credentials';

export class IVSError extends Error {
  constructor(operation, status, type, message) {
    super(message);
    this.operation = operation;
    this.status = status;
    this.type = type;
  }

  /** `UpdateComposition: ValidationException — layout.pip.pipOffset: ...` */
  get summary() { return `${this.operation}: ${this.type} — ${this.message}`; }

  /** The daemon wants a signature (auth.enabled), or refused the one it got. */
  get wantsSignature() {
    return this.type === 'AccessDeniedException' && !/authentication is off/.test(this.message);
  }
}

/** The signed-in key, kept in this tab only; null when calls go unsigned. */
export const session = {
  credentials: readCredentials(),
  signIn(credentials) {
    sessionStorage.setItem(CREDENTIALS, JSON.stringify(credentials));
    this.credentials = credentials;
  },
  signOut() {
    sessionStorage.removeItem(CREDENTIALS);
    this.credentials = null;
  },
};

function readCredentials() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(CREDENTIALS) ?? 'null');
    if (saved?.accessKeyId && saved?.secretAccessKey && saved?.region) return saved;
  } catch { /* nothing usable saved */ }
  return null;
}

/**
 * A same-origin request, signed when signed in. `path` is the path as sent (no query).
 * Returns the fetch Response (any status).
 */
export async function request(path, { method = 'POST', contentType = null, body = '', keepalive = false } = {}) {
  const headers = {};
  if (contentType) headers['Content-Type'] = contentType;
  if (session.credentials) {
    if (!canSign()) {
      throw new IVSError(path, 0, 'InsecureContext', 'signing needs HTTPS (listen.tls) or a loopback address');
    }
    Object.assign(headers, await sign({ method, path, host: location.host, contentType, body, credentials: session.credentials }));
  }
  return fetch(path, { method, headers, body: body === '' && method !== 'POST' ? undefined : body, cache: 'no-store',
                       credentials: 'omit', redirect: 'follow', keepalive });
}

/** Calls an operation; resolves to its JSON answer, rejects with an IVSError. */
export async function call(operation, input = {}) {
  let response;
  try {
    response = await request(`/${operation}`, { contentType: 'application/json', body: JSON.stringify(input) });
  } catch (error) {
    if (error instanceof IVSError) throw error;
    throw new IVSError(operation, 0, 'NetworkError', `the daemon did not answer (${error.message})`);
  }
  const text = await response.text();
  if (!response.ok) throw errorOf(operation, response, text);
  return text ? JSON.parse(text) : {};
}

export function errorOf(operation, response, text) {
  let message = text.trim() || response.statusText;
  try {
    const body = JSON.parse(text);
    message = body.message ?? body.Message ?? body.exceptionMessage ?? message;
  } catch { /* not JSON: the text itself */ }
  const type = (response.headers.get('x-amzn-ErrorType') ?? `HTTP ${response.status}`).split(':')[0];
  return new IVSError(operation, response.status, type, String(message).slice(0, 500));
}

/** Every item of a paginated List operation, at most `pages` pages of 100. */
export async function listAll(operation, key, input = {}, pages = 5) {
  const items = [];
  let nextToken;
  for (let page = 0; page < pages; page += 1) {
    const answer = await call(operation, { ...input, maxResults: 100, ...(nextToken ? { nextToken } : {}) });
    items.push(...(answer[key] ?? []));
    nextToken = answer.nextToken;
    if (!nextToken) break;
  }
  return items;
}
"""#

    /// `/console/sigv4.js`
    static let sigv4JS = #"""
// AWS Signature Version 4 in the browser (WebCrypto), as Sources/Auth/SigV4Verifier.swift checks
// it: the canonical request over the method, the path (each segment percent-encoded once more,
// as botocore does for every service but S3), an empty query, the signed headers (content-type
// when there is a body type, host, x-amz-date; lower case, sorted) and the SHA-256 of the body;
// the signing key derived from the secret, the date, the region and the service "ivs".
// WebCrypto exists only in a secure context: HTTPS, or a loopback address.
const encoder = new TextEncoder();

const hex = (bytes) => Array.from(new Uint8Array(bytes), (b) => b.toString(16).padStart(2, '0')).join('');

/** Whether this page can sign at all (WebCrypto needs a secure context). */
export const canSign = () => Boolean(globalThis.isSecureContext && globalThis.crypto?.subtle);

export async function sha256Hex(text) {
  return hex(await crypto.subtle.digest('SHA-256', typeof text === 'string' ? encoder.encode(text) : text));
}

async function hmac(key, text) {
  const imported = await crypto.subtle.importKey('raw', key, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await crypto.subtle.sign('HMAC', imported, encoder.encode(text)));
}

/** RFC 3986 encoding of each path segment ("/" kept), of the path as it is sent. */
export function canonicalPath(path) {
  return path.split('/').map((segment) => encodeURIComponent(segment)
    .replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)).join('/');
}

/** `20261128T150001Z` for a Date. */
export const amzDate = (date) => date.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:]/g, '');

/**
 * The headers to add to a request: `X-Amz-Date` and `Authorization`.
 * - host: the Host the browser will send (`location.host`: host, and port unless the default).
 * - contentType: the Content-Type sent (signed), or null when the request has none.
 * - body: the exact text sent ('' for none).
 * - credentials: {accessKeyId, secretAccessKey, region}.
 */
export async function sign({ method, path, host, contentType = null, body = '', credentials, now = new Date() }) {
  const timestamp = amzDate(now);
  const date = timestamp.slice(0, 8);
  const headers = { host, 'x-amz-date': timestamp };
  if (contentType) headers['content-type'] = contentType;
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((name) => `${name}:${String(headers[name]).trim().replace(/\s+/g, ' ')}\n`).join('');
  const canonicalRequest = [method.toUpperCase(), canonicalPath(path), '', canonicalHeaders, names.join(';'),
    await sha256Hex(body)].join('\n');
  const scope = `${date}/${credentials.region}/ivs/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', timestamp, scope, await sha256Hex(canonicalRequest)].join('\n');
  let key = encoder.encode(`AWS4${credentials.secretAccessKey}`);
  for (const part of [date, credentials.region, 'ivs', 'aws4_request']) key = await hmac(key, part);
  const signature = hex(await hmac(key, stringToSign));
  return {
    'X-Amz-Date': timestamp,
    Authorization: `AWS4-HMAC-SHA256 Credential=${credentials.accessKeyId}/${scope}, ` +
      `SignedHeaders=${names.join(';')}, Signature=${signature}`,
  };
}
"""#

    /// `/console/player.js`
    static let playerJS = #"""
// A WHEP viewer of one composition (the IETF WISH working group's WebRTC-HTTP egress protocol):
// a recvonly audio + video offer POSTed as application/sdp to /whep/composition/<id> (signed
// like the API when signed in), the 201's answer applied, its Location DELETEd when playback
// stops. No trickle: the offer waits (briefly) for its candidates. A daemon without WHEP
// answers 404 or 405: "playback not available".
import { errorOf, request } from '/console/api.js';

const GATHERING_MS = 1500;

export class WHEPPlayer {
  /** `onChange(state, detail)`; states: idle, connecting, playing, unavailable, failed. */
  constructor(video, onChange) {
    this.video = video;
    this.onChange = onChange;
    this.peer = null;
    this.resource = null;
    this.state = 'idle';
    this.detail = 'Not playing';
  }

  get active() { return this.state === 'connecting' || this.state === 'playing'; }

  set(state, detail = '') {
    this.state = state;
    this.detail = detail;
    this.onChange(state, detail);
  }

  async start(compositionId) {
    if (this.active) return;
    this.set('connecting', 'Connecting…');
    const peer = new RTCPeerConnection({ bundlePolicy: 'max-bundle' });
    this.peer = peer;
    try {
      peer.addTransceiver('video', { direction: 'recvonly' });
      peer.addTransceiver('audio', { direction: 'recvonly' });
      const stream = new MediaStream();
      peer.ontrack = (event) => {
        stream.addTrack(event.track);
        this.video.srcObject = stream;
      };
      peer.onconnectionstatechange = () => {
        if (this.peer !== peer) return;
        if (peer.connectionState === 'connected') this.set('playing', 'Playing (WHEP)');
        if (peer.connectionState === 'failed') this.fail('the connection failed (ICE or DTLS)');
        if (peer.connectionState === 'disconnected') this.set('connecting', 'Reconnecting…');
      };
      await peer.setLocalDescription(await peer.createOffer());
      await gathered(peer, GATHERING_MS);
      if (this.peer !== peer) return;
      const path = `/whep/composition/${encodeURIComponent(compositionId)}`;
      const response = await request(path, { method: 'POST', contentType: 'application/sdp', body: peer.localDescription.sdp });
      const text = await response.text();
      if (this.peer !== peer) return;
      if (response.status === 404 || response.status === 405) {
        this.close();
        this.set('unavailable', `Playback not available on this daemon (HTTP ${response.status})`);
        return;
      }
      if (response.status !== 201) {
        const error = errorOf('WHEP', response, text);
        this.fail(`${error.type}: ${error.message}`);
        return;
      }
      const location = response.headers.get('Location');
      if (location) this.resource = new URL(location, response.url);
      await peer.setRemoteDescription({ type: 'answer', sdp: text });
      this.video.play?.().catch(() => { /* muted autoplay may still wait for a gesture */ });
    } catch (error) {
      if (this.peer === peer) this.fail(error.message ?? String(error));
    }
  }

  fail(detail) {
    this.stop();
    this.set('failed', `Playback failed: ${detail}`);
  }

  close() {
    const peer = this.peer;
    this.peer = null;
    peer?.close();
    this.video.srcObject = null;
  }

  /** Ends playback and deletes the WHEP resource (best effort; the daemon times viewers out too). */
  stop({ keepalive = false } = {}) {
    this.close();
    const resource = this.resource;
    this.resource = null;
    if (resource && resource.origin === location.origin) {
      request(resource.pathname, { method: 'DELETE', keepalive }).catch(() => { /* gone already */ });
    }
    if (this.active) this.set('idle', 'Stopped');
  }
}

function gathered(peer, ms) {
  if (peer.iceGatheringState === 'complete') return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    peer.addEventListener('icegatheringstatechange', () => {
      if (peer.iceGatheringState === 'complete') {
        clearTimeout(timer);
        resolve();
      }
    });
  });
}
"""#
}
