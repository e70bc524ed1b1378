// The one module every caller-given or provider-given URL is fetched
// through (docs/api/media.md, "Outbound fetches"; webhooks too). http(s) only;
// the host is resolved once, every address checked, and the connection made
// to the checked address (the socket's lookup returns it), so DNS cannot
// change the answer between check and connect. Non-public addresses and
// plain http are refused unless OUTBOUND_ALLOW_HOSTS allows the host.
// Redirects (at most 3) are re-checked hop by hop; the body is capped in
// bytes and the whole exchange in time; the content type must be one the
// caller accepts. Webhook POSTs go through undici pools, each pinned to one
// checked address. Failures are OutboundFetchErrors with a reason the caller
// turns into a 400 (caller URL) or a 502 (provider URL).
import { lookup as dnsLookup } from "node:dns/promises";
// node:http and node:https (downloads) and undici (POSTs) are imported when
// first used:
// importing node:http as an ES module evaluates its lazy getters, which load
// Node's bundled undici (~25 ms of every start-up, for a feature most
// starts never use).
import type { IncomingMessage } from "node:http";
import { isIP, type LookupFunction } from "node:net";
import { AllowList, isNonPublic, normalizeAddress } from "./address-policy.ts";

export type OutboundFailure = "refused" | "unreachable" | "status" | "too_large" | "timeout" | "content_type";

export class OutboundFetchError extends Error {
  readonly reason: OutboundFailure;
  readonly status: number | undefined;
  constructor(reason: OutboundFailure, message: string, status?: number) {
    super(message);
    this.name = "OutboundFetchError";
    this.reason = reason;
    this.status = status;
  }
}

export function isOutboundFetchError(e: unknown): e is OutboundFetchError {
  return e instanceof OutboundFetchError;
}

export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

export interface OutboundFetcherOptions {
  /** OUTBOUND_ALLOW_HOSTS entries. */
  allowHosts: readonly string[];
  /** Default cap on one body, bytes. */
  maxBytes: number;
  /** Default deadline of one fetch (all hops, to the last byte), ms. */
  timeoutMs: number;
  /** DNS; injected by tests. */
  resolve?: Resolver;
  /** Trusted CAs for https (tests). */
  ca?: string | Buffer;
}

export interface FetchOptions {
  /** Content-type prefixes accepted, e.g. ["image/"]; absent: anything. */
  accept?: readonly string[];
  maxBytes?: number;
  timeoutMs?: number;
  signal?: AbortSignal;
  headers?: Record<string, string>;
}

/** What a receiver answered to a POST. */
export interface PostAnswer {
  status: number;
  /** The raw Retry-After header, when sent. */
  retryAfter: string | undefined;
}

export interface FetchedBody {
  body: Buffer;
  contentType: string;
  /** The URL that answered, after redirects. */
  url: string;
}

const maxRedirects = 3;
/** A POST answer's body is read up to this and dropped, bytes. */
const postAnswerMaxBytes = 64 * 1024;
/** Receivers (origin + address) with kept connections; the least recently used closes past this. */
const maxPools = 512;
const redirectStatuses = new Set([301, 302, 303, 307, 308]);

export class OutboundFetcher {
  private readonly allow: AllowList;
  private readonly opts: OutboundFetcherOptions;
  private readonly resolve: Resolver;

  constructor(opts: OutboundFetcherOptions) {
    this.opts = opts;
    this.allow = new AllowList(opts.allowHosts);
    this.resolve = opts.resolve ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
  }

  /** The cap on one body when a fetch sets none (MEDIA_MAX_DOWNLOAD_BYTES), bytes: what a caller's file read from the store is held to as well. */
  get maxBytes(): number {
    return this.opts.maxBytes;
  }

  /** Downloads `url` within the policy, the cap and the deadline. */
  async fetch(url: string, options: FetchOptions = {}): Promise<FetchedBody> {
    const timeoutMs = options.timeoutMs ?? this.opts.timeoutMs;
    const maxBytes = options.maxBytes ?? this.opts.maxBytes;
    const deadline = AbortSignal.timeout(timeoutMs);
    const signal = options.signal ? AbortSignal.any([deadline, options.signal]) : deadline;
    let current = url;
    for (let hop = 0; ; hop++) {
      const target = await this.check(current, signal, timeoutMs);
      const res = await this.send(target, options.headers ?? {}, signal, timeoutMs);
      if (redirectStatuses.has(res.statusCode ?? 0) && res.headers.location) {
        res.resume();
        if (hop >= maxRedirects) throw new OutboundFetchError("refused", `more than ${maxRedirects} redirects`);
        current = new URL(res.headers.location, target.url).toString();
        continue;
      }
      const status = res.statusCode ?? 0;
      if (status < 200 || status >= 300) {
        res.resume();
        throw new OutboundFetchError("status", `the URL answered HTTP ${status}`, status);
      }
      const contentType = (res.headers["content-type"] ?? "application/octet-stream").split(";")[0]!.trim().toLowerCase();
      if (options.accept && !options.accept.some((p) => contentType.startsWith(p))) {
        res.destroy();
        throw new OutboundFetchError("content_type", `the URL's content type ${contentType} is not one of ${options.accept.join(", ")}`);
      }
      const declared = Number(res.headers["content-length"] ?? NaN);
      if (Number.isFinite(declared) && declared > maxBytes) {
        res.destroy();
        throw new OutboundFetchError("too_large", `the URL's body (${declared} bytes) exceeds the limit of ${maxBytes} bytes`);
      }
      const body = await readCapped(res, maxBytes, signal, timeoutMs);
      return { body, contentType, url: target.url.toString() };
    }
  }

  /**
   * Checks a URL against the policy now (webhook creation): the same checks a
   * fetch makes before connecting, so a URL accepted here is refused later
   * only if its DNS answer changed.
   */
  async checkUrl(url: string, timeoutMs = this.opts.timeoutMs): Promise<void> {
    await this.check(url, AbortSignal.timeout(timeoutMs), timeoutMs);
  }

  /**
   * POSTs `body` once (webhook deliveries): the policy checked and the address
   * pinned as for fetch, no redirect followed (a 3xx is the answer), the
   * answer's body read up to 64 KiB and dropped. Resolves with any status;
   * rejects with an OutboundFetchError when no answer came (refused,
   * unreachable, timeout).
   *
   * Sent with undici rather than node:http (about a third of the CPU per
   * POST in bench:webhooks): one pool per origin and checked address, whose
   * connector dials that address and nothing else, so a kept connection is
   * only ever reused for the address its request was checked against.
   */
  async post(url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
    // The deadline's timer is cleared with the answer: AbortSignal.timeout's
    // stays for the whole timeout and fires (a DOMException and an abort
    // event) long after the delivery is done, one per POST.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException("the POST timed out", "TimeoutError")), timeoutMs);
    try {
      return await this.postWithin(deadline.signal, url, body, headers, timeoutMs);
    } finally {
      clearTimeout(timer);
    }
  }

  private async postWithin(signal: AbortSignal, url: string, body: string, headers: Record<string, string>, timeoutMs: number): Promise<PostAnswer> {
    const target = await this.check(url, signal, timeoutMs);
    const pool = this.pinnedPool(target, this.undici ?? (this.undici = await import("undici")));
    try {
      const res = await pool.request({
        path: target.url.pathname + target.url.search,
        method: "POST",
        headers: { "user-agent": "troupe-webhooks", accept: "*/*", "content-type": "application/json", ...headers },
        body,
        signal,
      });
      // The status is what counts; an oversized answer body is cut (its
      // connection closed) and a cut one does not change it; the deadline does.
      await res.body.dump({ limit: postAnswerMaxBytes, signal });
      const retryAfter = res.headers["retry-after"];
      return { status: res.statusCode, retryAfter: typeof retryAfter === "string" ? retryAfter : undefined };
    } catch (e) {
      throw transportError(e, signal, timeoutMs);
    }
  }

  private undici: typeof import("undici") | undefined;
  /** `${origin} ${address}` → a pool whose connections all go to that address, least recently used first. */
  private pools = new Map<string, import("undici").Pool>();

  private pinnedPool(target: { url: URL; address: string }, undici: typeof import("undici")): import("undici").Pool {
    const key = `${target.url.origin} ${target.address}`;
    let pool = this.pools.get(key);
    if (pool) {
      this.pools.delete(key); // re-inserted last: most recently used
    } else {
      const dial = undici.buildConnector(this.opts.ca ? { ca: this.opts.ca } : {});
      // The socket connects to the address checked for this pool, never to a
      // fresh DNS answer; TLS still verifies (and SNI names) the URL's host.
      const connect: import("undici").buildConnector.connector = (options, callback) => dial({ ...options, hostname: target.address }, callback);
      // As many connections as deliveries may be in flight to one receiver (kept between bursts).
      pool = new undici.Pool(target.url.origin, { connect, connections: 256 });
      if (this.pools.size >= maxPools) {
        const [oldestKey, oldest] = this.pools.entries().next().value!;
        this.pools.delete(oldestKey);
        void oldest.close().catch(() => undefined); // its requests in flight finish first
      }
    }
    this.pools.set(key, pool);
    return pool;
  }

  /** Closes kept connections (shutdown). */
  close(): void {
    for (const pool of this.pools.values()) void pool.destroy().catch(() => undefined);
    this.pools.clear();
  }

  /** Parses and checks one hop; resolves the host once and returns the address to connect to. */
  private async check(raw: string, signal: AbortSignal, timeoutMs: number): Promise<{ url: URL; address: string; family: 4 | 6 }> {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      throw new OutboundFetchError("refused", "not a valid URL");
    }
    if (url.protocol !== "http:" && url.protocol !== "https:") throw new OutboundFetchError("refused", `scheme ${url.protocol.slice(0, -1)} is not allowed (http or https only)`);
    if (url.username || url.password) throw new OutboundFetchError("refused", "URLs with credentials are not allowed");
    // The URL parser already turned decimal, octal and hex IPv4 forms into dotted quads.
    const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
    let addresses: { address: string; family: number }[];
    if (isIP(host) !== 0) addresses = [{ address: host, family: isIP(host) }];
    else {
      try {
        addresses = await raceSignal(this.resolve(host), signal, timeoutMs);
      } catch (e) {
        if (e instanceof OutboundFetchError) throw e;
        throw new OutboundFetchError("unreachable", `the host ${host} does not resolve`);
      }
      if (addresses.length === 0) throw new OutboundFetchError("unreachable", `the host ${host} does not resolve`);
    }
    const byName = this.allow.hasName(host);
    for (const a of addresses) {
      if (isNonPublic(a.address) && !byName && !this.allow.hasAddress(a.address)) {
        // A literal address is the caller's own; a name's DNS answer is not shown
        // (it would map the internal network for whoever asks).
        const what = isIP(host) !== 0 ? `${host} is a non-public address` : `the host ${host} resolves to a non-public address (private, loopback, link-local or reserved)`;
        throw new OutboundFetchError("refused", `${what}; OUTBOUND_ALLOW_HOSTS can allow it`);
      }
    }
    const chosen = normalizeAddress(addresses[0]!.address);
    if (url.protocol === "http:" && !byName && !addresses.every((a) => this.allow.hasAddress(a.address))) {
      throw new OutboundFetchError("refused", `plain http is only allowed for hosts in OUTBOUND_ALLOW_HOSTS; use https for ${host}`);
    }
    return { url, address: chosen.address, family: chosen.family };
  }

  private async send(target: { url: URL; address: string; family: 4 | 6 }, headers: Record<string, string>, signal: AbortSignal, timeoutMs: number): Promise<IncomingMessage> {
    // The socket connects to the address checked above, never to a fresh DNS answer.
    const pinned: LookupFunction = (_host, options, callback) => {
      if (options.all) callback(null, [{ address: target.address, family: target.family }]);
      else callback(null, target.address, target.family);
    };
    const { request } = target.url.protocol === "https:" ? await import("node:https") : await import("node:http");
    return new Promise((resolve, reject) => {
      const req = request(
        target.url,
        {
          headers: { "user-agent": "troupe-media-fetch", accept: "*/*", ...headers },
          lookup: pinned,
          signal,
          agent: false,
          ...(this.opts.ca ? { ca: this.opts.ca } : {}),
        },
        resolve,
      );
      req.on("error", (e) => reject(transportError(e, signal, timeoutMs)));
      req.end();
    });
  }
}

async function readCapped(res: IncomingMessage, maxBytes: number, signal: AbortSignal, timeoutMs: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of res as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > maxBytes) {
        res.destroy();
        throw new OutboundFetchError("too_large", `the URL's body exceeds the limit of ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
  } catch (e) {
    throw transportError(e, signal, timeoutMs);
  }
  if (!res.complete) throw new OutboundFetchError("unreachable", "the connection closed before the whole body arrived");
  return Buffer.concat(chunks, size);
}

function transportError(e: unknown, signal: AbortSignal, timeoutMs: number): OutboundFetchError {
  if (e instanceof OutboundFetchError) return e;
  if (signal.aborted) {
    const reason: unknown = signal.reason;
    if (reason instanceof DOMException && reason.name === "TimeoutError") return new OutboundFetchError("timeout", `the download did not finish within ${timeoutMs} ms`);
    return new OutboundFetchError("unreachable", "the download was cancelled");
  }
  const message = e instanceof Error ? e.message : String(e);
  return new OutboundFetchError("unreachable", `the URL could not be fetched: ${withoutAddresses(message)}`);
}

/** A run of address characters standing alone (not inside a word, a file name or a longer run). */
const addressLike = /(?<![\w.:])[0-9a-f.:]*[.:][0-9a-f.:]*(?![\w.:])/gi;

/**
 * A socket error names the address it dialled ("connect ECONNREFUSED
 * 10.1.2.3:443", "::1:443"): the DNS answer for the caller's host, which the
 * caller must not learn (an allow-listed internal name, a split-horizon
 * answer). Only a run that is an address (with or without its port) is
 * replaced: OpenSSL's messages name source files and lines
 * ("tlsany_meth.c:38:"), and a pattern for any hex and colons made those
 * read "tlsany_meth.[address]".
 */
export function withoutAddresses(message: string): string {
  return message.replace(addressLike, (run) => {
    const trailing = /[.:]*$/.exec(run)?.[0] ?? "";
    const text = run.slice(0, run.length - trailing.length);
    if (isIP(text) !== 0) return `[address]${trailing}`;
    const port = /:\d{1,5}$/.exec(text)?.[0] ?? "";
    return port !== "" && isIP(text.slice(0, -port.length)) !== 0 ? `[address]${port}${trailing}` : run;
  });
}

function raceSignal<T>(p: Promise<T>, signal: AbortSignal, timeoutMs: number): Promise<T> {
  if (signal.aborted) return Promise.reject(transportError(signal.reason, signal, timeoutMs));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(transportError(signal.reason, signal, timeoutMs));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(
      (v) => {
        signal.removeEventListener("abort", onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(e);
      },
    );
  });
}
