// A small replica app for the actor conformance tests and the actor
// benchmark: hosts the test actors on the host TROUPE_MODE picks (embedded
// or dapr), configured exactly as the gateway is (core/config.ts from the
// environment the cluster launcher sets), and exposes the host over HTTP:
//   POST /call/{type}/{id}/{method}  body: JSON input (or empty)
//        → 200 {"output": …} | 4xx/5xx {"error": {name, code?, status?, message, details?}}
//   GET  /active   → host.activeActors()
//   GET  /readyz   → 200 when host.ready()
// It stands in for gateway/main.ts in tests, so the same launcher
// (test/support/dapr-cluster.ts) runs both.
import { createServer } from "node:http";
import { loadConfig } from "../../gateway/config.ts";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { TroupeError } from "../../core/errors.ts";
import { createActorHost } from "../../actors/hosts/create-host.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { testActors } from "../actors/test-actors.ts";

const config = loadConfig(process.env);
const log = createLogger(config.logLevel, { replica: config.replica });
const host = await createActorHost({ mode: config.mode, dataDir: config.dataDir, actors: config.actors, clock: systemClock, log });
host.register(testActors.map((d) => eraseDefinition(d)));
await host.start();

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on("data", (c: Buffer) => chunks.push(c));
  req.on("end", () => {
    void handle(req.method ?? "GET", req.url ?? "/", Buffer.concat(chunks).toString("utf8")).then(({ status, body }) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    });
  });
});
server.keepAliveTimeout = 60_000;

async function handle(method: string, url: string, body: string): Promise<{ status: number; body: unknown }> {
  const path = url.split("?")[0] ?? "/";
  if (method === "GET" && path === "/readyz") {
    const ready = await host.ready();
    return { status: ready ? 200 : 503, body: { ready } };
  }
  if (method === "GET" && path === "/active") return { status: 200, body: host.activeActors() };
  const match = /^\/call\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(path);
  if (method === "POST" && match) {
    const [, type, id, actorMethod] = match.map((p) => decodeURIComponent(p));
    try {
      const output = await host.call(type!, id!, actorMethod!, body === "" ? undefined : (JSON.parse(body) as unknown));
      return { status: 200, body: { output } };
    } catch (error) {
      if (error instanceof TroupeError) {
        return {
          status: error.status,
          body: { error: { name: error.name, code: error.code, status: error.status, message: error.message, details: error.details } },
        };
      }
      const e = error instanceof Error ? error : new Error(String(error));
      return { status: 500, body: { error: { name: e.name, message: e.message } } };
    }
  }
  return { status: 404, body: { error: { name: "NotFound", message: `${method} ${path}` } } };
}

server.listen(config.port, "127.0.0.1", () => log.info("test actor app listening", { port: config.port, mode: config.mode }));

let stopping = false;
const shutdown = (): void => {
  if (stopping) return;
  stopping = true;
  server.close();
  void host.stop().then(() => process.exit(0));
};
process.on("SIGTERM", shutdown);
process.on("SIGINT", shutdown);
