// The address clients reach this Troupe at: PUBLIC_URL when set, else the
// listen address. The gateway listens before any feature starts, so every
// reader (file URLs in answers, result URLs of jobs re-armed at start) runs
// after it is known; a read before that is a bug, and throws instead of
// handing out a relative URL.
//
// It also tells this Troupe's own file URLs apart from everyone else's: a
// caller-given media URL (audio_url, image_url) under PUBLIC_URL or at the
// listen address that names the file route is a file already in the store,
// read from there (media/input-url.ts) instead of fetched over the network.
import { networkInterfaces } from "node:os";

/** Where stored files are served under a base (gateway/routes/files.ts): one id segment. */
const filesPrefix = "/v1/files/";

export class PublicUrl {
  private value: string | undefined;
  /** `scheme://host[:port][/path]` bases whose `/v1/files/{id}` is this Troupe's file route. */
  private readonly fileBases: string[] = [];

  constructor(configured: string | undefined) {
    this.value = configured?.replace(/\/$/, "");
    const base = this.value === undefined ? undefined : normalizedBase(this.value);
    if (base !== undefined) this.fileBases.push(base);
  }

  /** Called once the gateway listens (kept when PUBLIC_URL was configured). */
  listening(host: string, port: number): string {
    for (const name of listenNames(host)) {
      const base = normalizedBase(`http://${name}:${port}`);
      if (base !== undefined && !this.fileBases.includes(base)) this.fileBases.push(base);
    }
    const shownHost = host === "0.0.0.0" || host === "::" ? "localhost" : host;
    this.value ??= `http://${shownHost}:${port}`;
    return this.value;
  }

  get base(): string {
    if (this.value === undefined) throw new Error("the public URL is read before the gateway listens");
    return this.value;
  }

  /**
   * The id segment when `raw` is this Troupe's file route — under PUBLIC_URL,
   * or at the listen address (with a wildcard listen: localhost and every
   * interface address, on the listen port) — else undefined. The query and
   * fragment are ignored, as the file route ignores them; a URL carrying
   * credentials is never taken for ours (the outbound guard refuses it).
   */
  fileIdOf(raw: string): string | undefined {
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return undefined;
    }
    if (url.username !== "" || url.password !== "") return undefined;
    const at = `${url.protocol}//${url.host}${url.pathname}`;
    for (const base of this.fileBases) {
      if (!at.startsWith(base + filesPrefix)) continue;
      const id = at.slice(base.length + filesPrefix.length);
      if (id !== "" && !id.includes("/")) return id;
    }
    return undefined;
  }
}

/** A URL's base as fileIdOf compares it: lower-case host, default port dropped, no trailing slash; undefined when it does not parse. */
function normalizedBase(text: string): string | undefined {
  try {
    const url = new URL(text);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, "")}`;
  } catch {
    return undefined;
  }
}

const bracketed = (address: string): string => (address.includes(":") ? `[${address}]` : address);

/** The host names a URL may give for the listen address `host`: the names that reach this socket. */
function listenNames(host: string): string[] {
  if (host === "0.0.0.0" || host === "::") {
    // Every interface listens ("::" takes IPv4 connections too: dual stack).
    const addresses = Object.values(networkInterfaces()).flatMap((list) => list ?? []);
    return ["localhost", ...addresses.filter((a) => host === "::" || a.family === "IPv4").map((a) => bracketed(a.address))];
  }
  if (host === "localhost") return ["localhost", "127.0.0.1", "[::1]"];
  if (host === "127.0.0.1" || host === "::1") return ["localhost", bracketed(host)];
  return [bracketed(host)];
}
