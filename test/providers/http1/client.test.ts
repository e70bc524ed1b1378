// The upstream HTTP/1.1 client over real sockets: keep-alive reuse, the
// per-origin connection cap, aborts (waiting, in flight, mid-body), early
// stream exits, idle closes from either side, size limits, HTTPS.
import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import { createServer as createTcpServer, type AddressInfo, type Socket } from "node:net";
import t from "tap";
import { Http1Client, ResponseTooLargeError, type UpstreamRequest } from "../../../providers/http1/client.ts";
import { ConnectionClosedError } from "../../../providers/http1/connection.ts";
import { selfSignedCertificate } from "../../support/tls.ts";

interface Upstream {
  url: string;
  /** Sockets the server accepted, and how many are still open. */
  accepted: number;
  open(): number;
  close(): Promise<void>;
}

async function listen(server: Server, secure = false): Promise<Upstream> {
  const sockets = new Set<Socket>();
  const up: Upstream = {
    url: "",
    accepted: 0,
    open: () => sockets.size,
    close: async () => {
      for (const s of sockets) s.destroy();
      server.close();
      await once(server, "close");
    },
  };
  server.on(secure ? "secureConnection" : "connection", (s: Socket) => {
    up.accepted += 1;
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  up.url = `${secure ? "https" : "http"}://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return up;
}

function post(url: string, body: string | null, signal = new AbortController().signal): UpstreamRequest {
  return { method: "POST", url, headers: { "content-type": "application/json" }, body, signal };
}

async function readAll(body: AsyncIterable<Buffer>): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks).toString("utf8");
}

const until = async (check: () => boolean, ms = 2000): Promise<void> => {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("condition not met in time");
    await new Promise((r) => setTimeout(r, 5));
  }
};

t.test("buffered and streamed answers; keep-alive reuses one connection; the request arrives intact", async (t) => {
  const seen: { method: string; url: string; host: string; body: string; length: string }[] = [];
  const up = await listen(
    createHttpServer((req: IncomingMessage, res: ServerResponse) => {
      let body = "";
      req.setEncoding("utf8");
      req.on("data", (c: string) => (body += c));
      req.on("end", () => {
        seen.push({ method: req.method ?? "", url: req.url ?? "", host: req.headers.host ?? "", body, length: req.headers["content-length"] ?? "" });
        if (req.url === "/stream") {
          res.writeHead(200, { "content-type": "text/event-stream" });
          res.write("data: one\n\n");
          setTimeout(() => res.end("data: two\n\n"), 10);
        } else res.end(JSON.stringify({ echo: body }));
      });
    }),
  );
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  const text = "héllo — ünïcode";
  for (let i = 0; i < 5; i++) {
    const res = await client.requestBuffered(post(`${up.url}/v1/x?q=1`, JSON.stringify({ text, i })));
    t.equal(res.status, 200);
    t.same(JSON.parse(res.body.toString("utf8")), { echo: JSON.stringify({ text, i }) });
  }
  const streamed = await client.request(post(`${up.url}/stream`, "{}"));
  t.equal(streamed.headers["content-type"], "text/event-stream");
  t.equal(await readAll(streamed.body), "data: one\n\ndata: two\n\n");
  t.equal(up.accepted, 1, "six sequential requests used one keep-alive connection");
  t.equal(seen[0]!.url, "/v1/x?q=1");
  t.equal(seen[0]!.host, up.url.slice("http://".length));
  t.equal(seen[0]!.length, String(Buffer.byteLength(seen[0]!.body)), "content-length counts bytes, not characters");
});

t.test("the per-origin cap holds; waiters are served in turn; an abort while waiting frees its place", async (t) => {
  let inFlight = 0;
  let maxInFlight = 0;
  const up = await listen(
    createHttpServer((req, res) => {
      inFlight += 1;
      maxInFlight = Math.max(maxInFlight, inFlight);
      req.resume();
      setTimeout(() => {
        inFlight -= 1;
        res.end("ok");
      }, 20);
    }),
  );
  const client = new Http1Client({ maxConnectionsPerOrigin: 2 });
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  const aborted = new AbortController();
  const results = Array.from({ length: 6 }, (_, i) => client.requestBuffered(post(up.url, "{}", i === 4 ? aborted.signal : undefined)));
  aborted.abort(new Error("caller gave up"));
  const settled = await Promise.allSettled(results);
  t.same(
    settled.map((s) => s.status),
    ["fulfilled", "fulfilled", "fulfilled", "fulfilled", "rejected", "fulfilled"],
  );
  t.match((settled[4] as PromiseRejectedResult).reason, { message: "caller gave up" }, "the waiter fails with the caller's reason at once");
  t.equal(maxInFlight, 2, "never more than two connections at once");
  t.equal(up.accepted, 2);
});

t.test("an abort in flight fails at once with the caller's reason and closes that connection", async (t) => {
  const up = await listen(createHttpServer(() => undefined)); // never answers
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  const ctl = new AbortController();
  const pending = client.requestBuffered(post(up.url, "{}", ctl.signal));
  await until(() => up.open() === 1);
  const started = Date.now();
  ctl.abort(new Error("deadline"));
  await t.rejects(pending, { message: "deadline" });
  t.ok(Date.now() - started < 100, "rejected at once");
  await until(() => up.open() === 0);
  t.pass("the upstream saw the connection close");
  await t.rejects(client.requestBuffered(post(up.url, "{}", ctl.signal)), { message: "deadline" }, "an already-aborted signal never sends");
});

t.test("streams: an error mid-body reaches the reader; breaking out early closes the connection", async (t) => {
  const up = await listen(
    createHttpServer((req, res) => {
      req.resume();
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write("data: first\n\n");
      if (req.url === "/cut") setTimeout(() => res.socket?.destroy(), 10);
      else setTimeout(() => res.end("data: last\n\n"), 50);
    }),
  );
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  const cut = await client.request(post(`${up.url}/cut`, "{}"));
  await t.rejects(readAll(cut.body), ConnectionClosedError, "a cut stream is an error, not a short body");

  const early = await client.request(post(`${up.url}/early`, "{}"));
  for await (const chunk of early.body) {
    t.equal(chunk.toString(), "data: first\n\n");
    break;
  }
  await until(() => up.open() === 0);
  const after = await client.request(post(`${up.url}/whole`, "{}"));
  t.equal(await readAll(after.body), "data: first\n\ndata: last\n\n", "the next request gets a fresh connection");
});

t.test("a large streamed body arrives whole through backpressure", async (t) => {
  const piece = Buffer.alloc(64 * 1024, "x");
  const up = await listen(
    createHttpServer(async (req, res) => {
      req.resume();
      for (let i = 0; i < 128; i++) if (!res.write(piece)) await once(res, "drain");
      res.end();
    }),
  );
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  const res = await client.request(post(up.url, "{}"));
  let bytes = 0;
  for await (const c of res.body) {
    bytes += c.length;
    if (bytes % (1024 * 1024) < c.length) await new Promise((r) => setTimeout(r, 5)); // a slow reader
  }
  t.equal(bytes, 128 * 64 * 1024);
});

t.test("idle connections stay open, or close at once when the upstream's Keep-Alive hint leaves no safe idle time", async (t) => {
  const up = await listen(
    createHttpServer((req, res) => {
      req.resume();
      if (req.url === "/hint") res.setHeader("keep-alive", "timeout=1");
      res.end("ok");
    }),
  );
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  await client.requestBuffered(post(up.url, "{}"));
  await new Promise((r) => setTimeout(r, 50));
  t.equal(up.open(), 1, "without a hint the idle connection stays open");

  // Keep-Alive: timeout=1 leaves no safe idle time (1 s minus a 1 s margin, two sweep periods): the client closes at once.
  await client.requestBuffered(post(`${up.url}/hint`, "{}"));
  await until(() => up.open() === 0);
  const again = await client.requestBuffered(post(up.url, "{}"));
  t.equal(again.body.toString(), "ok");
  t.equal(up.accepted, 2);
});

t.test("idle connections close after keepAliveMs (one sweep timer per pool)", async (t) => {
  const up = await listen(
    createHttpServer((req, res) => {
      req.resume();
      res.end("ok");
    }),
  );
  const client = new Http1Client({ keepAliveMs: 100 });
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  await client.requestBuffered(post(up.url, "{}"));
  t.equal(up.open(), 1);
  const started = Date.now();
  await until(() => up.open() === 0, 3000);
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 90 && elapsed < 1500, `closed after ${elapsed} ms (100 ms keep-alive, 500 ms sweeps)`);
  const again = await client.requestBuffered(post(up.url, "{}"));
  t.equal(again.body.toString(), "ok", "and the next request opens a new one");
});

t.test("an upstream that drops idle connections costs no failed request", async (t) => {
  const server = createHttpServer((req, res) => {
    req.resume();
    res.end("ok");
  });
  server.keepAliveTimeout = 30; // the upstream closes idle sockets after 30 ms
  const up = await listen(server);
  const client = new Http1Client();
  t.teardown(async () => {
    client.close();
    await up.close();
  });
  for (let i = 0; i < 3; i++) {
    const res = await client.requestBuffered(post(up.url, "{}"));
    t.equal(res.body.toString(), "ok");
    await until(() => up.open() === 0); // closed by the upstream while idle
  }
  t.equal(up.accepted, 3);
});

t.test("failures: refused connection, oversized body, malformed answer, header injection", async (t) => {
  const client = new Http1Client({ maxBodyBytes: 1000 });
  t.teardown(() => client.close());
  const refused = createTcpServer();
  refused.listen(0, "127.0.0.1");
  await once(refused, "listening");
  const port = (refused.address() as AddressInfo).port;
  refused.close();
  await once(refused, "close");
  await t.rejects(client.requestBuffered(post(`http://127.0.0.1:${port}`, "{}")), ConnectionClosedError);

  const raw = createTcpServer((s) => {
    s.once("data", () => {
      s.write(big ? `HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n${"y".repeat(5000)}` : "HTTP/1.1 200 OK\r\nContent-Length: nope\r\n\r\n");
    });
  });
  let big = true;
  raw.listen(0, "127.0.0.1");
  await once(raw, "listening");
  const rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
  t.teardown(() => raw.close());
  await t.rejects(client.requestBuffered(post(rawUrl, "{}")), ResponseTooLargeError);
  big = false;
  await t.rejects(client.requestBuffered(post(rawUrl, "{}")), { name: "HttpParseError", message: /Content-Length/ });
  const smuggling: Record<string, string>[] = [{ "x-evil": "a\r\nx-injected: 1" }, { "x-evil: 1\r\nx-injected": "1" }, { "bad name": "1" }];
  for (const headers of smuggling) {
    await t.rejects(client.requestBuffered({ ...post(rawUrl, "{}"), headers }), /not a valid field name and value/, JSON.stringify(headers));
  }
  await t.rejects(client.requestBuffered(post("ftp://127.0.0.1/", "{}")), /unsupported protocol/);
});

t.test("HTTPS with the upstream's certificate trusted; refused when it is not", async (t) => {
  const { key, cert } = selfSignedCertificate("localhost", ["DNS:localhost", "IP:127.0.0.1"]);
  const server = createHttpsServer({ key, cert }, (req, res) => {
    req.resume();
    res.end(JSON.stringify({ secure: true }));
  });
  const up = await listen(server as unknown as Server, true);
  const trusting = new Http1Client({ tls: { ca: cert } });
  const strict = new Http1Client();
  t.teardown(async () => {
    trusting.close();
    strict.close();
    await up.close();
  });
  for (const host of [up.url, up.url.replace("127.0.0.1", "localhost")]) {
    const res = await trusting.requestBuffered(post(host, "{}"));
    t.same(JSON.parse(res.body.toString()), { secure: true }, host);
  }
  await t.rejects(strict.requestBuffered(post(up.url, "{}")), { message: /certificate/ });
});
