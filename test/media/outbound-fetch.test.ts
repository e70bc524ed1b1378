// The outbound fetcher against a real HTTP server on loopback: the guard
// (schemes, non-public addresses in every notation, plain http, redirects to
// refused addresses, redirect limits), DNS resolved once and the connection
// made to the checked address, the size cap (declared and mid-stream), the
// deadline, the content-type check and upstream statuses.
import t, { type Test } from "tap";
import { createHook } from "node:async_hooks";
import { createServer, type Server } from "node:http";
import { createServer as createHttpsServer } from "node:https";
import type { TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import { OutboundFetcher, OutboundFetchError, withoutAddresses, type Resolver } from "../../media/outbound-fetch.ts";
import { selfSignedCertificate } from "../support/tls.ts";

let port = 0;
const server: Server = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://x");
  switch (url.pathname) {
    case "/ok":
      res.writeHead(200, { "content-type": "image/png" }).end(Buffer.from("PNGDATA"));
      return;
    case "/redirect":
      res.writeHead(302, { location: url.searchParams.get("to") ?? "/ok" }).end();
      return;
    case "/loop":
      res.writeHead(307, { location: "/loop" }).end();
      return;
    case "/declared-big":
      res.writeHead(200, { "content-type": "image/png", "content-length": "1000000" }).end(Buffer.alloc(1_000_000));
      return;
    case "/chunked-big": {
      res.writeHead(200, { "content-type": "image/png" });
      let sent = 0;
      const tick = () => {
        if (res.destroyed) return;
        if (sent >= 200) return void res.end();
        sent++;
        res.write(Buffer.alloc(10_000, 1), () => setImmediate(tick));
      };
      tick();
      return;
    }
    case "/slow": {
      res.writeHead(200, { "content-type": "audio/wav" });
      const timer = setInterval(() => res.write("x"), 50);
      res.on("close", () => clearInterval(timer));
      return;
    }
    case "/endless": {
      // An answer body that never ends: a POST must stop reading it at its cap.
      res.writeHead(200, { "content-type": "application/octet-stream" });
      const tick = () => {
        if (!res.destroyed) res.write(Buffer.alloc(16_384), () => setImmediate(tick));
      };
      tick();
      return;
    }
    case "/silent":
      return; // never answers
    case "/html":
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end("<html>");
      return;
    case "/boom":
      res.writeHead(503, { "content-type": "application/json" }).end('{"error":"down"}');
      return;
    default:
      res.writeHead(404).end();
  }
});

t.before(async () => {
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as AddressInfo).port;
});
t.teardown(() => new Promise<void>((r) => server.close(() => r())));

const loopback = (allowHosts: string[], resolve?: Resolver) => new OutboundFetcher({ allowHosts, maxBytes: 100_000, timeoutMs: 2_000, ...(resolve ? { resolve } : {}) });

async function refusal(t: Test, p: Promise<unknown>, reason: string, message?: RegExp): Promise<void> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  t.ok(e instanceof OutboundFetchError, "an OutboundFetchError");
  t.equal((e as OutboundFetchError).reason, reason);
  if (message) t.match((e as OutboundFetchError).message, message);
}

t.test("an allowed loopback URL is fetched", async (t) => {
  const got = await loopback(["127.0.0.1"]).fetch(`http://127.0.0.1:${port}/ok`, { accept: ["image/"] });
  t.equal(got.body.toString(), "PNGDATA");
  t.equal(got.contentType, "image/png");
});

t.test("loopback and metadata addresses are refused without the allow list, in every notation", async (t) => {
  const f = loopback([]);
  for (const url of [
    `http://127.0.0.1:${port}/ok`,
    `https://127.0.0.1:${port}/ok`,
    `http://2130706433:${port}/ok`, // decimal
    `http://0177.0.0.1:${port}/ok`, // octal
    `http://0x7f.1:${port}/ok`, // hex, short form
    `http://[::1]:${port}/ok`,
    `http://[::ffff:127.0.0.1]:${port}/ok`,
    "http://169.254.169.254/latest/meta-data/",
    "https://[fd00:ec2::254]/latest/meta-data/",
    "https://10.0.0.1/x",
    "https://0.0.0.0/x",
  ]) {
    await refusal(t, f.fetch(url), "refused", /non-public|plain http/);
  }
});

t.test("schemes, garbage and credentials", async (t) => {
  const f = loopback(["127.0.0.1"]);
  await refusal(t, f.fetch("not a url"), "refused", /not a valid URL/);
  await refusal(t, f.fetch("ftp://127.0.0.1/x"), "refused", /scheme ftp/);
  await refusal(t, f.fetch("file:///etc/passwd"), "refused", /scheme file/);
  await refusal(t, f.fetch(`http://u:p@127.0.0.1:${port}/ok`), "refused", /credentials/);
});

t.test("DNS is resolved once and the connection goes to the checked address", async (t) => {
  let calls = 0;
  // A rebinding resolver: the first answer is the allowed loopback, any later one would be elsewhere.
  const resolver: Resolver = async () => (calls++ === 0 ? [{ address: "127.0.0.1", family: 4 }] : [{ address: "10.9.9.9", family: 4 }]);
  const got = await loopback(["fake.test"], resolver).fetch(`http://fake.test:${port}/ok`);
  t.equal(got.body.toString(), "PNGDATA", "fake.test does not exist in real DNS: the socket used the checked address");
  t.equal(calls, 1, "one resolution");
});

t.test("a name resolving to a private address is refused; any bad address in the answer is enough; the answer is never shown", async (t) => {
  const resolver: Resolver = async () => [
    { address: "93.184.216.34", family: 4 },
    { address: "::ffff:169.254.169.254", family: 6 },
  ];
  await refusal(t, loopback([], resolver).fetch("https://sneaky.test/x"), "refused", /sneaky\.test resolves to a non-public address/);
  const e = (await loopback([], resolver).fetch("https://sneaky.test/x").catch((err: unknown) => err)) as Error;
  t.notMatch(e.message, /169\.254|93\.184|ffff/, `no DNS answer in: ${e.message}`);
  const internal: Resolver = async () => [{ address: "10.1.2.3", family: 4 }];
  for (const p of [loopback([], internal).fetch("https://intranet.test/x"), loopback([], internal).checkUrl("https://intranet.test/x"), loopback([], internal).post("https://intranet.test/x", "{}", {}, 2_000)]) {
    const refused = (await p.catch((err: unknown) => err)) as Error;
    t.notMatch(refused.message, /10\.1\.2\.3/, `no DNS answer in: ${refused.message}`);
  }
});

t.test("a connection error to an allowed name does not show the address it dialled", async (t) => {
  const resolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
  for (const p of [loopback(["internal.test"], resolver).fetch("http://internal.test:1/x"), loopback(["internal.test"], resolver).post("http://internal.test:1/x", "{}", {}, 2_000)]) {
    const e = (await p.catch((err: unknown) => err)) as OutboundFetchError;
    t.equal(e.reason, "unreachable");
    t.match(e.message, /could not be fetched: .*ECONNREFUSED/);
    t.notMatch(e.message, /127\.0\.0\.1/, e.message);
  }
});

t.test("a TLS error keeps OpenSSL's text whole: only addresses are replaced", async (t) => {
  // https to the plain HTTP server: OpenSSL's "wrong version number", whose
  // text names a source file and line (".../tlsany_meth.c:38:").
  const e = (await loopback(["127.0.0.1"]).fetch(`https://127.0.0.1:${port}/ok`).catch((err: unknown) => err)) as OutboundFetchError;
  t.equal(e.reason, "unreachable");
  t.match(e.message, /could not be fetched: .*wrong version number/);
  t.notMatch(e.message, /\w\.\[address\]/, `no file name read as an address in: ${e.message}`);
  t.match(e.message, /\.c:\d+/, "the source file and line stay");
});

t.test("what is an address in an error's text, and what is not", async (t) => {
  const cases: Array<[string, string]> = [
    ["connect ECONNREFUSED 10.1.2.3:443", "connect ECONNREFUSED [address]:443"],
    ["connect ECONNREFUSED ::1:443", "connect ECONNREFUSED [address]"],
    ["connect ETIMEDOUT fd00:ec2::254", "connect ETIMEDOUT [address]"],
    ["dialled ::ffff:169.254.169.254.", "dialled [address]."],
    ["error:0A00010B:SSL routines:tls_get_more_records:wrong version number:../ssl/record/methods/tlsany_meth.c:38:", "error:0A00010B:SSL routines:tls_get_more_records:wrong version number:../ssl/record/methods/tlsany_meth.c:38:"],
    ["ssl3_record.c:350: and version 1.2.3", "ssl3_record.c:350: and version 1.2.3"],
  ];
  for (const [message, shown] of cases) t.equal(withoutAddresses(message), shown, message);
});

t.test("plain http to a public host is refused; https is required", async (t) => {
  const resolver: Resolver = async () => [{ address: "93.184.216.34", family: 4 }];
  await refusal(t, loopback([], resolver).fetch("http://public.test/x"), "refused", /plain http/);
});

t.test("an unresolvable host is unreachable", async (t) => {
  const resolver: Resolver = async () => {
    throw new Error("ENOTFOUND");
  };
  await refusal(t, loopback([], resolver).fetch("https://nowhere.test/x"), "unreachable", /does not resolve/);
});

t.test("redirects: followed when allowed, refused to loopback, at most 3", async (t) => {
  const ok = await loopback(["127.0.0.1"]).fetch(`http://127.0.0.1:${port}/redirect?to=/ok`);
  t.equal(ok.body.toString(), "PNGDATA");
  t.match(ok.url, /\/ok$/);
  // The first hop is allowed by name; the redirect target is a loopback IP the list does not name.
  const resolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
  await refusal(t, loopback(["fake.test"], resolver).fetch(`http://fake.test:${port}/redirect?to=${encodeURIComponent("http://127.0.0.1:" + port + "/ok")}`), "refused", /127\.0\.0\.1/);
  await refusal(t, loopback(["fake.test"], resolver).fetch(`http://fake.test:${port}/redirect?to=${encodeURIComponent("http://169.254.169.254/")}`), "refused", /non-public/);
  await refusal(t, loopback(["127.0.0.1"]).fetch(`http://127.0.0.1:${port}/loop`), "refused", /more than 3 redirects/);
});

t.test("size cap: declared and mid-stream", async (t) => {
  const f = loopback(["127.0.0.1"]);
  await refusal(t, f.fetch(`http://127.0.0.1:${port}/declared-big`), "too_large", /1000000 bytes/);
  await refusal(t, f.fetch(`http://127.0.0.1:${port}/chunked-big`), "too_large", /limit of 100000/);
  const bigger = await f.fetch(`http://127.0.0.1:${port}/chunked-big`, { maxBytes: 3_000_000 });
  t.equal(bigger.body.length, 2_000_000, "a per-call cap overrides the default");
});

t.test("deadline", async (t) => {
  const started = Date.now();
  await refusal(t, loopback(["127.0.0.1"]).fetch(`http://127.0.0.1:${port}/slow`, { timeoutMs: 300 }), "timeout", /300 ms/);
  t.ok(Date.now() - started < 1500, "gave up near the deadline");
});

t.test("content type and upstream status", async (t) => {
  const f = loopback(["127.0.0.1"]);
  await refusal(t, f.fetch(`http://127.0.0.1:${port}/html`, { accept: ["image/"] }), "content_type", /text\/html/);
  const e = await f.fetch(`http://127.0.0.1:${port}/boom`).catch((err: unknown) => err);
  t.ok(e instanceof OutboundFetchError);
  t.equal((e as OutboundFetchError).reason, "status");
  t.equal((e as OutboundFetchError).status, 503);
  await refusal(t, f.fetch(`http://127.0.0.1:1/x`), "unreachable", /could not be fetched/);
});

t.test("webhook POSTs keep their connections across bursts (no connect per delivery)", async (t) => {
  let connections = 0;
  const count = () => connections++;
  server.on("connection", count);
  t.teardown(() => void server.off("connection", count));
  const fetcher = loopback(["127.0.0.1"]);
  t.teardown(() => fetcher.close());
  // A socket goes back to the pool just after its answer is read: let that happen between bursts.
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));
  const burst = async () => {
    const answers = await Promise.all(Array.from({ length: 100 }, () => fetcher.post(`http://127.0.0.1:${port}/ok`, "{}", {}, 2_000)));
    await settle();
    return answers;
  };
  const first = await burst();
  t.ok(first.every((a) => a.status === 200));
  const opened = connections;
  t.ok(opened > 0 && opened <= 100, `the first burst opened ${opened} connections`);
  await burst();
  await burst();
  // At most one connection per request in flight at once: a socket freed
  // early in the first burst may serve two of its requests, so later bursts
  // may open the few the first did not need, never one per delivery.
  t.ok(connections <= 100, `later bursts reuse the kept connections (${connections} in all for 300 POSTs, 100 at a time)`);
});

t.test("webhook POSTs: the connection goes to the checked address, also when DNS changes between deliveries", async (t) => {
  // A second receiver on the same port at another loopback address, answering 202 instead of 200.
  const other = createServer((_req, res) => void res.writeHead(202).end());
  await new Promise<void>((resolve, reject) => other.once("error", reject).listen(port, "127.0.0.2", resolve));
  t.teardown(() => new Promise<void>((r) => other.close(() => r())));
  let answer = "127.0.0.1";
  const resolved: string[] = [];
  const resolver: Resolver = async () => {
    resolved.push(answer);
    return [{ address: answer, family: 4 }];
  };
  const fetcher = loopback(["fake.test"], resolver);
  t.teardown(() => fetcher.close());
  const url = `http://fake.test:${port}/ok`;
  t.equal((await fetcher.post(url, "{}", {}, 2_000)).status, 200, "fake.test does not exist in real DNS: the socket used the checked address");
  t.equal((await fetcher.post(url, "{}", {}, 2_000)).status, 200, "again, on the kept connection");
  answer = "127.0.0.2";
  t.equal((await fetcher.post(url, "{}", {}, 2_000)).status, 202, "after the answer changed, the new address — not a connection kept to the old one");
  t.same(resolved, ["127.0.0.1", "127.0.0.1", "127.0.0.2"], "one resolution per delivery");
});

t.test("webhook POSTs: refused addresses, no redirect followed, the answer body capped, the deadline", async (t) => {
  await refusal(t, loopback([]).post(`http://127.0.0.1:${port}/ok`, "{}", {}, 2_000), "refused", /non-public|plain http/);
  let followed = 0;
  const count = (req: { url?: string }) => void (req.url === "/ok" && followed++);
  server.on("request", count);
  t.teardown(() => void server.off("request", count));
  const f = loopback(["127.0.0.1"]);
  t.teardown(() => f.close());
  const redirected = await f.post(`http://127.0.0.1:${port}/redirect?to=/ok`, "{}", {}, 2_000);
  t.equal(redirected.status, 302, "a 3xx is the answer");
  t.equal(followed, 0, "the redirect target was not requested");
  const started = Date.now();
  const endless = await f.post(`http://127.0.0.1:${port}/endless`, "{}", {}, 2_000);
  t.equal(endless.status, 200, "an endless answer body is cut at the cap; the status stands");
  t.ok(Date.now() - started < 1_500, "without reading to the deadline");
  await refusal(t, f.post(`http://127.0.0.1:${port}/silent`, "{}", {}, 300), "timeout", /300 ms/);
  await refusal(t, f.post(`http://127.0.0.1:1/x`, "{}", {}, 2_000), "unreachable", /could not be fetched/);
});

t.test("webhook POSTs leave no deadline timer behind once answered", async (t) => {
  const f = loopback(["127.0.0.1"]);
  t.teardown(() => f.close());
  const burst = () => Promise.all(Array.from({ length: 50 }, () => f.post(`http://127.0.0.1:${port}/ok`, "{}", {}, 60_000)));
  await burst(); // the connections exist before counting
  // Timers of the deadline's length (undici and the server keep per-request timers of their own).
  const live = new Set<number>();
  const hook = createHook({
    init: (id, type, _trigger, resource) => void (type === "Timeout" && (resource as { _idleTimeout?: number })._idleTimeout === 60_000 && live.add(id)),
    destroy: (id) => void live.delete(id),
  }).enable();
  t.teardown(() => void hook.disable());
  const answers = await burst();
  t.ok(answers.every((a) => a.status === 200));
  await new Promise((resolve) => setTimeout(resolve, 50)); // destroy hooks run after the clear
  t.equal(live.size, 0, `${live.size} deadline timers still pending after 50 answered POSTs with a 60 s deadline`);
});

t.test("webhook POSTs over https: the pinned address, the certificate checked for the URL's host", async (t) => {
  const { key, cert } = selfSignedCertificate("receiver.test", ["DNS:receiver.test"]);
  const names: (string | false | null)[] = [];
  const tls = createHttpsServer({ key, cert }, (req, res) => {
    names.push((req.socket as TLSSocket).servername);
    req.resume();
    res.writeHead(204).end();
  });
  await new Promise<void>((r) => tls.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => tls.close(() => r())));
  const tlsPort = (tls.address() as AddressInfo).port;
  const resolver: Resolver = async () => [{ address: "127.0.0.1", family: 4 }];
  const trusting = new OutboundFetcher({ allowHosts: ["receiver.test", "impostor.test"], maxBytes: 100_000, timeoutMs: 2_000, resolve: resolver, ca: cert });
  const strict = new OutboundFetcher({ allowHosts: ["receiver.test"], maxBytes: 100_000, timeoutMs: 2_000, resolve: resolver });
  t.teardown(() => {
    trusting.close();
    strict.close();
  });
  const answer = await trusting.post(`https://receiver.test:${tlsPort}/hook`, "{}", {}, 2_000);
  t.equal(answer.status, 204, "receiver.test does not exist in real DNS: TLS went to the checked address");
  t.same(names, ["receiver.test"], "SNI names the URL's host");
  await refusal(t, trusting.post(`https://impostor.test:${tlsPort}/hook`, "{}", {}, 2_000), "unreachable", /impostor\.test|altnames|certificate/i);
  await refusal(t, strict.post(`https://receiver.test:${tlsPort}/hook`, "{}", {}, 2_000), "unreachable", /certificate/);
  t.same(names, ["receiver.test"], "no request reached the receiver over an unverified connection");
});
