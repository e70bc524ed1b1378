// A webhook receiver over a real socket, for tests and the benchmark. It
// verifies every delivery with independent implementations — the
// `standardwebhooks` package for the Standard Webhooks headers, and a plain
// HMAC-SHA256 over the raw body for X-Troupe-Signature — and answers with
// the statuses a test scripts (per event id, or one for all).
import { createHmac, timingSafeEqual } from "node:crypto";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Webhook } from "standardwebhooks";

export interface ReceivedDelivery {
  eventId: string;
  type: string;
  /** The request path: which webhook it was, when several share the receiver. */
  path: string;
  body: Record<string, unknown>;
  headers: IncomingHttpHeaders;
  /** Both signatures checked with the webhook's secret. */
  verified: boolean;
  receivedAtMs: number;
  /** What the receiver answered (set just before answering). */
  answered: number | "hang";
}

/** What to answer: a status (with headers), or "hang" (never answer: a stuck receiver). */
export type Answer = { status: number; headers?: Record<string, string> } | "hang";

export interface WebhookReceiver {
  url: string;
  received: ReceivedDelivery[];
  /** The secret deliveries are verified with (set after creating the webhook)… */
  secret: string;
  /** …or, per URL path (several webhooks on one receiver), this one. */
  secrets: Map<string, string>;
  /** Answers taken in order for each delivery; when empty, `fallback`. */
  script: Answer[];
  fallback: Answer;
  /** When set, decides every answer instead: `nth` counts this event id's deliveries, from 1. */
  answerFor?: (eventId: string, nth: number) => Answer;
  /** Called on each delivery (the benchmark measures lag here). */
  onDelivery?: (delivery: ReceivedDelivery) => void;
  close(): Promise<void>;
}

export function troupeSignatureValid(secret: string, rawBody: string, header: string | undefined): boolean {
  if (!header) return false;
  const expected = Buffer.from(createHmac("sha256", secret).update(rawBody).digest("hex"));
  const given = Buffer.from(header);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const hanging = new Set<import("node:http").ServerResponse>();
  /** Deliveries so far per event id (a count, not a scan of `received`: the benchmark receives thousands). */
  const deliveriesOf = new Map<string, number>();
  const receiver: WebhookReceiver = {
    url: "",
    received: [],
    secret: "",
    secrets: new Map(),
    script: [],
    fallback: { status: 200 },
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      // Received when the body is in, before this receiver's own verification work.
      const receivedAtMs = Date.now();
      const raw = Buffer.concat(chunks).toString("utf8");
      let verified = false;
      const secret = receiver.secrets.get(req.url ?? "") ?? receiver.secret;
      try {
        new Webhook(secret).verify(raw, {
          "webhook-id": String(req.headers["webhook-id"]),
          "webhook-timestamp": String(req.headers["webhook-timestamp"]),
          "webhook-signature": String(req.headers["webhook-signature"]),
        });
        verified = troupeSignatureValid(secret, raw, req.headers["x-troupe-signature"] as string | undefined);
      } catch {
        verified = false;
      }
      const body = JSON.parse(raw) as Record<string, unknown>;
      const eventId = String(body["id"]);
      const nth = (deliveriesOf.get(eventId) ?? 0) + 1;
      deliveriesOf.set(eventId, nth);
      const answer = receiver.answerFor?.(eventId, nth) ?? receiver.script.shift() ?? receiver.fallback;
      const delivery: ReceivedDelivery = {
        eventId,
        type: String(body["type"]),
        path: req.url ?? "",
        body,
        headers: req.headers,
        verified,
        receivedAtMs,
        answered: answer === "hang" ? "hang" : answer.status,
      };
      receiver.received.push(delivery);
      receiver.onDelivery?.(delivery);
      if (answer === "hang") {
        hanging.add(res);
        return;
      }
      res.writeHead(answer.status, { "content-type": "text/plain", ...answer.headers });
      res.end("ok");
    });
  });
  server.keepAliveTimeout = 5000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  return receiver;
}
