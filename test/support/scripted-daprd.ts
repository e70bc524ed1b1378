// A real HTTP server standing in for daprd's HTTP API, whose next answers
// are scripted: each entry is [status, body]; once they run out, `otherwise`.
// Hands back a DaprdClient pointed at it and the requests it saw.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Test } from "tap";
import { DaprdClient } from "../../actors/hosts/dapr/daprd-client.ts";

export type ScriptedAnswer = [status: number, body: string];

export async function scriptedDaprd(t: Test, answers: ScriptedAnswer[], otherwise: ScriptedAnswer = [204, ""]): Promise<{ client: DaprdClient; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    req.resume();
    req.on("end", () => {
      seen.push(`${req.method} ${req.url}`);
      const [status, body] = answers.shift() ?? otherwise;
      res.writeHead(status, { "content-type": "application/json" }).end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const client = new DaprdClient({ daprHost: "127.0.0.1", daprHttpPort: (server.address() as AddressInfo).port, connections: 2 });
  t.teardown(async () => {
    await client.close();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { client, seen };
}
