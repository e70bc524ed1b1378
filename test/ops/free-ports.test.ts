// The test and CI port pickers choose below the kernel's ephemeral range: a
// port from that range, released before daprd or a replica binds it, can
// become an outgoing connection's source port meanwhile (CI's rolling
// restart once failed with "could not listen" so).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import t from "tap";
import { freePort, freePorts, isPortFree } from "../support/net.ts";

const ephemeralStart = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);

t.test("freePorts: distinct, below the ephemeral range, and bindable", async (t) => {
  const ports = await freePorts(60);
  t.equal(new Set(ports).size, 60, "60 distinct ports");
  t.ok(ports.every((p) => p >= 10_000 && p < ephemeralStart), `all in [10000, ${ephemeralStart})`);
  const results = await Promise.all(ports.map(isPortFree));
  t.ok(results.every(Boolean), "each can be bound");
  const one = await freePort();
  t.ok(one >= 10_000 && one < ephemeralStart, "freePort too");
});

t.test("scripts/free-port.py: below the ephemeral range, with room for an offset", async (t) => {
  for (const args of [[], ["--offset", "10000"]]) {
    const run = spawnSync("python3", ["scripts/free-port.py", ...args], { encoding: "utf8" });
    t.equal(run.status, 0, `free-port.py ${args.join(" ")} exits 0: ${run.stderr}`);
    const port = Number(run.stdout.trim());
    const offset = args.length ? 10_000 : 0;
    t.ok(port >= 10_000 && port + offset < ephemeralStart, `${port} (+${offset}) below ${ephemeralStart}`);
    t.ok(await isPortFree(port + offset), "bindable");
  }
});
