// A DaprActorHost serving the test actors without a daprd: its state API is
// a stand-in where every read finds nothing and every write succeeds, for
// tests of the host's own HTTP surface (active actors, the hand-off). With
// `holdWrites`, state writes are never answered, as daprd holds the write of
// an actor it is moving away.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { eraseDefinition } from "../../actors/actor.ts";
import { DaprActorHost } from "../../actors/hosts/dapr/dapr-host.ts";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { testActors } from "../actors/test-actors.ts";
import { freePort } from "./net.ts";

export interface StubDaprHost {
  /** Started; the test stops it. */
  host: DaprActorHost;
  /** The host's callback address, `http://127.0.0.1:<port>`. */
  base: string;
  /** Closes the stand-in state API (after the host has stopped). */
  closeStateApi(): Promise<void>;
}

export async function startStubDaprHost(options: { handOffMs?: number; commitWaitMs?: number; holdWrites?: boolean } = {}): Promise<StubDaprHost> {
  const held: ServerResponse[] = [];
  const stateApi = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      if (options.holdWrites && req.method === "POST" && req.url?.endsWith("/state")) held.push(res);
      else res.writeHead(204).end();
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
    clock: systemClock,
    log: createLogger("error"),
  });
  host.register(testActors.map((d) => eraseDefinition(d)));
  await host.start();
  return {
    host,
    base: `http://127.0.0.1:${callbackPort}`,
    closeStateApi: () => {
      for (const res of held) res.destroy();
      return new Promise<void>((resolve) => stateApi.close(() => resolve()));
    },
  };
}
