// One keep-alive undici pool to the target Troupe. Each call is timed by the
// caller and answers what the report needs: the status, Troupe's error code,
// its X-Request-Id, and the parsed body (for the agents scenario's ids).
import { Pool } from "undici";

export interface Answer {
  status: number;
  code: string | undefined;
  /** Troupe's error message, for the report's example per error code. */
  message: string | undefined;
  requestId: string | undefined;
  body: unknown;
}

export class TroupeClient {
  private readonly pool: Pool;
  private readonly headers: Record<string, string>;

  constructor(url: string, key: string, connections: number, timeoutS: number) {
    const timeoutMs = Math.round(timeoutS * 1000);
    this.pool = new Pool(url, { connections, pipelining: 1, keepAliveTimeout: 60_000, headersTimeout: timeoutMs, bodyTimeout: timeoutMs, connectTimeout: timeoutMs });
    this.headers = { authorization: `Bearer ${key}`, "content-type": "application/json", "user-agent": "troupe-load" };
  }

  /**
   * `body`: an object (serialized here) or a string sent as is (fixed-body
   * scenarios serialize once). `wantBody` false: a success's body is
   * drained unread — parsing every chat answer cost the driver a third of
   * its closed-loop throughput on two cores (bench/load-vs-autocannon.ts).
   */
  async call(method: "GET" | "POST", path: string, body?: unknown, wantBody = true): Promise<Answer> {
    try {
      const payload = body === undefined ? null : typeof body === "string" ? body : JSON.stringify(body);
      const res = await this.pool.request({ method, path, headers: this.headers, body: payload });
      const header = res.headers["x-request-id"];
      const requestId = Array.isArray(header) ? header[0] : header;
      const failed = res.statusCode >= 400;
      if (!failed && !wantBody) {
        await res.body.dump({ limit: Number.MAX_SAFE_INTEGER });
        return { status: res.statusCode, code: undefined, message: undefined, requestId, body: undefined };
      }
      const text = await res.body.text();
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      return { status: res.statusCode, code: failed ? errorField(parsed, "code") : undefined, message: failed ? (errorField(parsed, "message") ?? text.slice(0, 200)) : undefined, requestId, body: parsed };
    } catch (error) {
      return { status: 0, code: networkCode(error), message: error instanceof Error ? error.message : String(error), requestId: undefined, body: undefined };
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

function errorField(body: unknown, name: "code" | "message"): string | undefined {
  if (body && typeof body === "object" && "error" in body) {
    const error: unknown = body.error;
    if (error && typeof error === "object" && name in error) {
      const value: unknown = (error as Record<string, unknown>)[name];
      if (typeof value === "string") return value;
    }
  }
  return undefined;
}

/** undici's error code (UND_ERR_HEADERS_TIMEOUT, ECONNREFUSED, …) or the error's name. */
function networkCode(error: unknown): string {
  if (error && typeof error === "object") {
    if ("code" in error && typeof error.code === "string") return error.code;
    if (error instanceof Error) return error.name;
  }
  return "error";
}
