// providers/upstream-request.ts over a real socket: status errors keep only the start of
// the upstream's error body (a huge one is not read to its end), and a
// malformed answer is a protocol failure, not a connection failure.
import { once } from "node:events";
import { createServer } from "node:http";
import { createServer as createTcpServer, type AddressInfo } from "node:net";
import t from "tap";
import { ProviderCallError } from "../../providers/errors.ts";
import { createUpstreamClient, send, sendForJson } from "../../providers/upstream-request.ts";

t.test("a streamed request's error status keeps only the start of a huge error body", async (t) => {
  let written = 0;
  const server = createServer(async (req, res) => {
    req.resume();
    res.writeHead(500, { "content-type": "text/plain" });
    const piece = Buffer.alloc(64 * 1024, "e");
    // Up to 64 MiB, unless the client goes away first.
    for (let i = 0; i < 1024 && !res.destroyed; i++) {
      written += piece.length;
      if (!res.write(piece)) await Promise.race([once(res, "drain"), once(res, "close")]);
    }
    res.end();
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const client = createUpstreamClient();
  t.teardown(() => {
    client.close();
    server.close();
  });
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/chat`;
  const error = await send("openai", client, url, { headers: {}, body: {}, signal: new AbortController().signal }).then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(error instanceof ProviderCallError);
  t.match(error, { kind: "http", status: 500, retryable: true });
  t.ok((error as Error).message.length < 2100, `message of ${(error as Error).message.length} characters`);
  t.ok(written < 64 * 1024 * 1024, `the upstream stopped after ${written} bytes: the body was not read to its end`);
});

t.test("a malformed answer is a protocol failure (not retried), a cut connection a connection failure (retried)", async (t) => {
  let answer = "HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n";
  const raw = createTcpServer((s) => s.once("data", () => (answer ? s.end(answer) : s.destroy())));
  raw.listen(0, "127.0.0.1");
  await once(raw, "listening");
  const client = createUpstreamClient();
  t.teardown(() => {
    client.close();
    raw.close();
  });
  const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}/`;
  const opts = { headers: {}, body: {}, signal: new AbortController().signal };
  await t.rejects(sendForJson("openai", client, url, opts), { kind: "protocol", retryable: false, message: /malformed HTTP response/ });
  answer = "";
  await t.rejects(sendForJson("openai", client, url, opts), { kind: "connection", retryable: true, message: /connection failed/ });
});
