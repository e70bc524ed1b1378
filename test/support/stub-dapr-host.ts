// A DaprActorHost serving the test actors without a daprd: its state API is
// a stand-in where every read finds nothing and every write succeeds, for
// tests of the host's own HTTP surface (active actors, the hand-off). With
// `holdWrites`, state writes are never answered, as daprd holds the write of
// an actor it is moving away; with `keepState`, writes are kept and read
// back (and reads counted), as daprd's state store would.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { eraseDefinition } from "../../actors/actor.ts";
import { DaprActorHost } from "../../actors/hosts/dapr/dapr-host.ts";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { testActors } from "../actors/test-actors.ts";
import { freePort } from "./net.ts";

export interface StubDaprHost {
  /** State reads per actor path (`TestCounter/a`), with keepState. */
  reads: Map<string, number>;
  /** Started; the test stops it. */
  host: DaprActorHost;
  /** The host's callback address, `http://127.0.0.1:<port>`. */
  base: string;
  /** Closes the stand-in state API (after the host has stopped). */
  closeStateApi(): Promise<void>;
}

interface StubOptions {
  handOffMs?: number;
  commitWaitMs?: number;
  holdWrites?: boolean;
  keepState?: boolean;
  maxResident?: number;
}

/** `/v1.0/actors/<type>/<id>/state[/state]` → `<type>/<id>`. */
const actorOf = (url: string) => url.split("/").slice(3, 5).map(decodeURIComponent).join("/");

export async function startStubDaprHost(options: StubOptions = {}): Promise<StubDaprHost> {
  const held: ServerResponse[] = [];
  const stored = new Map<string, string>();
  const reads = new Map<string, number>();
  const stateApi = createServer((req: IncomingMessage, res: ServerResponse) => {
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      const url = req.url ?? "";
      if (options.holdWrites && req.method === "POST" && url.endsWith("/state")) held.push(res);
      else if (options.keepState && req.method === "POST" && url.endsWith("/state")) {
        const [operation] = JSON.parse(body) as Array<{ operation: string; request: { value?: unknown } }>;
        if (operation?.operation === "upsert") stored.set(actorOf(url), JSON.stringify(operation.request.value));
        else stored.delete(actorOf(url));
        res.writeHead(204).end();
      } else if (options.keepState && req.method === "GET" && url.endsWith("/state/state")) {
        reads.set(actorOf(url), (reads.get(actorOf(url)) ?? 0) + 1);
        const value = stored.get(actorOf(url));
        if (value === undefined) res.writeHead(204).end();
        else res.writeHead(200, { "content-type": "application/json" }).end(value);
      } else res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => stateApi.listen(0, "127.0.0.1", resolve));
  const callbackPort = await freePort();
  const host = new DaprActorHost({
    daprHost: "127.0.0.1",
    daprHttpPort: (stateApi.address() as AddressInfo).port,
    callbackPort,
    idleTimeoutMs: 60_000,
    ...(options.handOffMs === undefined ? {} : { handOffMs: options.handOffMs }),
    ...(options.commitWaitMs === undefined ? {} : { commitWaitMs: options.commitWaitMs }),
    ...(options.maxResident === undefined ? {} : { maxResident: options.maxResident }),
    clock: systemClock,
    log: createLogger("error"),
  });
  host.register(testActors.map((d) => eraseDefinition(d)));
  await host.start();
  return {
    reads,
    host,
    base: `http://127.0.0.1:${callbackPort}`,
    closeStateApi: () => {
      for (const res of held) res.destroy();
      return new Promise<void>((resolve) => stateApi.close(() => resolve()));
    },
  };
}
