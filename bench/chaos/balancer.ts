// The chaos run's stand-in for a Kubernetes Service in front of the
// replicas: requests go round-robin to replicas whose /readyz answered 200
// recently (polled every 250 ms, as a readiness probe would be), and a
// request whose connection is refused — nothing was sent, so nothing can
// have happened — is sent to the next replica, as an ingress retries a
// connect failure (nginx's proxy_next_upstream error). Requests already
// accepted by a replica that then dies are not replayed: they are failures.
import { Pool, errors as undiciErrors } from "undici";

export interface Answer {
  status: number;
  body: unknown;
  replica: number;
}

/** Which replica a thrown request went to: a rolling restart blames a failure on the replica it was sent to. */
const sentTo = new WeakMap<object, number>();

export class Balancer {
  private readonly pools: Pool[];
  private readonly up: boolean[];
  /** Taken out of rotation by the run (a terminating pod leaving the endpoints): probes do not put it back. */
  private readonly cordoned = new Set<number>();
  /** Requests sent to each replica and not yet answered. */
  private readonly inFlight: number[];
  private next = 0;
  private poller: NodeJS.Timeout | undefined;
  /** Connects refused and sent elsewhere (not failures: nothing reached a replica). */
  rerouted = 0;

  readonly urls: readonly string[];
  private readonly headers: Record<string, string>;

  constructor(urls: readonly string[], headers: Record<string, string>) {
    this.urls = urls;
    this.headers = headers;
    // No request may hang the run: 30 s is far past every Troupe deadline here.
    this.pools = urls.map((url) => new Pool(url, { connections: 64, headersTimeout: 30_000, bodyTimeout: 30_000, connectTimeout: 2_000 }));
    this.up = urls.map(() => true);
    this.inFlight = urls.map(() => 0);
  }

  startProbing(): void {
    const probe = async (i: number): Promise<void> => {
      try {
        const res = await fetch(`${this.urls[i]}/readyz`, { signal: AbortSignal.timeout(1_000) });
        await res.body?.cancel();
        this.up[i] = res.ok;
      } catch {
        this.up[i] = false;
      }
    };
    this.poller = setInterval(() => void Promise.all(this.urls.map((_, i) => probe(i))), 250);
  }

  upReplicas(): number[] {
    return this.up.flatMap((ok, i) => (ok && !this.cordoned.has(i) ? [i] : []));
  }

  /** No new request goes to replica i until uncordon(i), whatever its /readyz says. */
  cordon(i: number): void {
    this.cordoned.add(i);
  }

  uncordon(i: number): void {
    this.cordoned.delete(i);
  }

  /** Requests replica i has been sent and not answered yet. */
  inFlightOn(i: number): number {
    return this.inFlight[i] ?? 0;
  }

  /** Marks replica i down at once (the run knows it killed it; a probe would within 250 ms). */
  markDown(i: number): void {
    this.up[i] = false;
  }

  /** The replica a request that threw was sent to (undefined for other errors). */
  static replicaOf(error: unknown): number | undefined {
    return typeof error === "object" && error !== null ? sentTo.get(error) : undefined;
  }

  async send(method: "GET" | "POST", path: string, body?: unknown): Promise<Answer> {
    const tried = new Set<number>();
    for (;;) {
      const replica = this.pick(tried);
      tried.add(replica);
      this.inFlight[replica]! += 1;
      try {
        const res = await this.pools[replica]!.request({
          method,
          path,
          headers: body === undefined ? this.headers : { ...this.headers, "content-type": "application/json" },
          body: body === undefined ? null : JSON.stringify(body),
        });
        const text = await res.body.text();
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // not JSON: keep the text for the failure log
        }
        return { status: res.statusCode, body: parsed, replica };
      } catch (error) {
        if (!refused(error) || tried.size >= this.urls.length) {
          if (typeof error === "object" && error !== null) sentTo.set(error, replica);
          throw error;
        }
        this.up[replica] = false;
        this.rerouted += 1;
      } finally {
        this.inFlight[replica]! -= 1;
      }
    }
  }

  async close(): Promise<void> {
    clearInterval(this.poller);
    await Promise.all(this.pools.map((p) => p.close().catch(() => undefined)));
  }

  private pick(tried: Set<number>): number {
    const candidates = this.upReplicas().filter((i) => !tried.has(i));
    // Every replica down (or tried): try one anyway; the failure is the answer.
    const pool = candidates.length > 0 ? candidates : this.urls.map((_, i) => i).filter((i) => !tried.has(i));
    const choice = pool[this.next++ % pool.length];
    return choice ?? 0;
  }
}

function refused(error: unknown): boolean {
  const code = (error as { code?: string } | null)?.code;
  return code === "ECONNREFUSED" || error instanceof undiciErrors.ConnectTimeoutError;
}
