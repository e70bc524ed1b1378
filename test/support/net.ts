// Small network helpers for tests: free loopback ports and polling.
import type { Server } from "node:http";
import { readFileSync } from "node:fs";
import { createServer, type AddressInfo, type Server as NetServer } from "node:net";

// Ports are picked below the kernel's ephemeral range, never with listen(0):
// a port from that range, closed again until daprd or a replica binds it, can
// meanwhile become the source port of any outgoing connection (daprd dialling
// placement, a client dialling Redis) and the later bind fails with
// EADDRINUSE. CI's rolling restart failed once exactly so.
const fallbackEphemeralStart = 32_768;
const lowestPickedPort = 10_000;

/** The first port of net.ipv4.ip_local_port_range (32768 when unreadable). */
function ephemeralRangeStart(): number {
  try {
    const low = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > lowestPickedPort + 1_000 ? low : fallbackEphemeralStart;
  } catch {
    return fallbackEphemeralStart;
  }
}

function bindLoopback(port: number): Promise<NetServer | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once("error", () => resolve(undefined));
    server.listen(port, "127.0.0.1", () => resolve(server));
  });
}

/**
 * `count` distinct loopback ports that were free a moment ago, chosen at
 * random below the ephemeral range (see above). All are held bound until
 * every one is found, so one call never returns a port twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const span = ephemeralRangeStart() - lowestPickedPort;
  const held: NetServer[] = [];
  const ports: number[] = [];
  try {
    for (let tries = 0; ports.length < count; tries++) {
      if (tries > count * 200) throw new Error(`found only ${ports.length} of ${count} free loopback ports`);
      const port = lowestPickedPort + Math.floor(Math.random() * span);
      const server = await bindLoopback(port);
      if (server) {
        held.push(server);
        ports.push(port);
      }
    }
  } finally {
    await Promise.all(held.map((s) => new Promise((r) => s.close(r))));
  }
  return ports;
}

export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** True when nothing listens on `port` on loopback. */
export function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once("error", () => resolve(false));
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)));
  });
}

/** A base port p with p and p+1 both free on loopback and below the ephemeral range (the cluster uses PORT+i per replica). */
export async function freePortPair(): Promise<number> {
  const ephemeralStart = ephemeralRangeStart();
  for (;;) {
    const base = await freePort();
    if (base + 1 < ephemeralStart && (await isPortFree(base + 1))) return base;
  }
}

/** Starts `server` on a random loopback port: its base URL, and a close that drops kept-alive connections first. */
export async function listenOnLoopback(server: Server): Promise<{ url: string; close: () => Promise<void> }> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url, close };
}
