// A small OTLP/HTTP traces receiver for tests: a real HTTP server that takes
// what the OpenTelemetry exporter sends to POST /v1/traces (OTLP JSON, gzip
// or not) and decodes it into flat spans with their resource's service
// attributes, so tests can check trace ids and parent links.
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | undefined;
  name: string;
  /** OTLP's enum: 1 internal, 2 server, 3 client. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
  /** OTLP status code: 0 unset, 1 ok, 2 error. */
  statusCode: number;
  service: string;
  instance: string;
}

export interface OtlpReceiver {
  /** Base URL: what OTEL_EXPORTER_OTLP_ENDPOINT is set to. */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (each one batch). */
  requests: number;
  /** Resolves once `predicate` holds over the spans received, or rejects after timeoutMs. */
  waitFor(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  close(): Promise<void>;
}

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
}
interface OtlpAttribute {
  key: string;
  value: OtlpValue;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: OtlpAttribute[];
  status?: { code?: number };
}
interface OtlpExport {
  resourceSpans?: { resource?: { attributes?: OtlpAttribute[] }; scopeSpans?: { spans?: OtlpSpan[] }[] }[];
}

function attributes(list: OtlpAttribute[] | undefined): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const a of list ?? []) {
    const v = a.value;
    out[a.key] = v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue ?? "";
  }
  return out;
}

/** OTLP JSON carries ids as hex; base64 (protobuf-style JSON) is converted. */
function hexId(id: string | undefined): string | undefined {
  if (!id) return undefined;
  return /^[0-9a-f]+$/.test(id) ? id : Buffer.from(id, "base64").toString("hex");
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return req.headers["content-encoding"] === "gzip" ? gunzipSync(body) : body;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const receiver = { requests: 0 };
  const server = createServer((req, res) => {
    if (req.method !== "POST" || req.url !== "/v1/traces") {
      res.writeHead(404).end();
      return;
    }
    readBody(req)
      .then((body) => {
        if (!String(req.headers["content-type"]).startsWith("application/json")) throw new Error(`expected OTLP JSON, got ${req.headers["content-type"]}`);
        const parsed = JSON.parse(body.toString("utf8")) as OtlpExport;
        receiver.requests++;
        for (const rs of parsed.resourceSpans ?? []) {
          const resource = attributes(rs.resource?.attributes);
          for (const ss of rs.scopeSpans ?? []) {
            for (const s of ss.spans ?? []) {
              spans.push({
                traceId: hexId(s.traceId) ?? "",
                spanId: hexId(s.spanId) ?? "",
                parentSpanId: hexId(s.parentSpanId),
                name: s.name,
                kind: s.kind,
                attributes: attributes(s.attributes),
                statusCode: s.status?.code ?? 0,
                service: String(resource["service.name"] ?? ""),
                instance: String(resource["service.instance.id"] ?? ""),
              });
            }
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      })
      .catch((error: unknown) => res.writeHead(400, { "content-type": "text/plain" }).end(String(error)));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    get requests() {
      return receiver.requests;
    },
    async waitFor(predicate, timeoutMs = 15_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(spans)) {
        if (Date.now() > deadline) throw new Error(`spans never matched; received: ${JSON.stringify(spans.map((s) => [s.name, s.traceId.slice(0, 8), s.instance]))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
      return spans;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
