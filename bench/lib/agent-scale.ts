// The scale phase of `bench/agents.ts` (--scale=N): one embedded Troupe
// creates N conversations over HTTP while turns keep the first --active of
// them busy the whole time (a load tester's many conversations, of which a
// fixed set is talking), and a line every --sample-seconds shows the
// process's memory: with the resident cap (ACTOR_MAX_RESIDENT) it follows
// the active set, not N. At the end: RSS (anonymous and lmdb's file-backed
// map apart), the store's size on disk, Troupe's CPU per request.
import { Redis } from "ioredis";
import { Pool } from "undici";
import { fmt, summarize } from "../../load/stats.ts";
import { cpuSeconds, diskBytes, memoryOf, type Memory } from "./proc-stats.ts";
import { redisUsedMemory } from "./soak-stores.ts";

export interface ScaleOptions {
  url: string;
  pid: number | undefined;
  dataDir: string;
  key: string;
  total: number;
  active: number;
  /** Requests in flight creating conversations, and running turns. */
  creators: number;
  talkers: number;
  script: string;
  sampleSeconds: number;
  /** A Dapr cluster's Redis: its used_memory is sampled, and reported per conversation at the end. */
  redisUrl?: string;
}

export interface ScaleResult {
  created: number;
  turns: number;
  errors: number;
  seconds: number;
  samples: Array<{ seconds: number; created: number; turns: number } & Memory>;
  end: Memory;
  diskMiB: { actors: number; tenancy: number; total: number };
  /** Growth of Redis's used_memory over the run, per conversation created (Dapr). */
  redisBytesPerConversation?: number;
  redisUsedMiB?: number;
  turnP50Ms: number;
  turnP99Ms: number;
  troupeCpuUsPerRequest: number;
}

export async function runScale(o: ScaleOptions): Promise<ScaleResult> {
  const pool = new Pool(o.url, { connections: o.creators + o.talkers, keepAliveTimeout: 60_000, headersTimeout: 120_000, bodyTimeout: 120_000 });
  const headers = { authorization: `Bearer ${o.key}`, "content-type": "application/json" };
  const activeIds: string[] = [];
  const turnLatenciesMs: number[] = [];
  let claimed = 0;
  let created = 0;
  let turns = 0;
  let errors = 0;
  let firstError: string | undefined;
  let creating = true;
  const fail = (what: string) => {
    errors += 1;
    firstError ??= what;
  };
  const post = async (path: string, body: unknown): Promise<{ status: number; text: string }> => {
    const res = await pool.request({ method: "POST", path, headers, body: JSON.stringify(body) });
    return { status: res.statusCode, text: await res.body.text() };
  };
  const creator = async () => {
    while (claimed < o.total) {
      claimed += 1;
      try {
        const res = await post("/v1/agents/conversations", {});
        if (res.status >= 400) fail(`create ${res.status} ${res.text.slice(0, 200)}`);
        else {
          created += 1;
          if (activeIds.length < o.active) activeIds.push((JSON.parse(res.text) as { id: string }).id);
        }
      } catch (error) {
        fail(String(error));
      }
    }
  };
  let next = 0;
  const talker = async () => {
    while (creating) {
      const id = activeIds[next++ % Math.max(1, activeIds.length)];
      if (!id) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        continue;
      }
      const t0 = performance.now();
      try {
        const res = await post(`/v1/agents/conversations/${id}/messages`, { content: o.script });
        if (res.status >= 400) fail(`turn ${res.status} ${res.text.slice(0, 200)}`);
        else {
          turns += 1;
          turnLatenciesMs.push(performance.now() - t0);
        }
      } catch (error) {
        fail(String(error));
      }
    }
  };
  const redis = o.redisUrl ? new Redis(o.redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 }) : undefined;
  const usedMemory = async () => (redis ? redisUsedMemory([redis]) : Number.NaN);
  const redisBefore = await usedMemory();
  const started = performance.now();
  const cpuBefore = await cpuSeconds(o.pid);
  const samples: ScaleResult["samples"] = [];
  let last = { at: started, created: 0, turns: 0 };
  const sample = async () => {
    const now = performance.now();
    const memory = await memoryOf(o.pid);
    const redisNote = redis ? `  redis ${fmt((await usedMemory()) / 1024 / 1024, 0)} MiB` : "";
    const seconds = (now - started) / 1000;
    samples.push({ seconds, created, turns, ...memory });
    const span = (now - last.at) / 1000;
    console.log(
      `scale  ${fmt(seconds, 0).padStart(5)} s  created ${String(created).padStart(8)} (${fmt((created - last.created) / span, 0)}/s)  turns ${String(turns).padStart(8)} (${fmt((turns - last.turns) / span, 0)}/s)  errors ${errors}  rss ${fmt(memory.rssMiB, 0)} MiB (anon ${fmt(memory.anonMiB, 0)}, file ${fmt(memory.fileMiB, 0)})${redisNote}`,
    );
    last = { at: now, created, turns };
  };
  const sampler = setInterval(() => void sample(), o.sampleSeconds * 1000);
  const talking = Promise.all(Array.from({ length: o.talkers }, talker));
  await Promise.all(Array.from({ length: o.creators }, creator));
  creating = false;
  await talking;
  clearInterval(sampler);
  const seconds = (performance.now() - started) / 1000;
  const cpu = (await cpuSeconds(o.pid)) - cpuBefore;
  await sample();
  await pool.close();
  const redisAfter = await usedMemory();
  redis?.disconnect();
  if (firstError) console.log(`          first error: ${firstError}`);
  const [actors, tenancy, total] = await Promise.all([diskBytes(`${o.dataDir}/actors`), diskBytes(`${o.dataDir}/tenancy`), diskBytes(o.dataDir)]);
  const mib = (bytes: number) => bytes / 1024 / 1024;
  const s = summarize(turnLatenciesMs);
  return {
    created,
    turns,
    errors,
    seconds,
    samples,
    end: await memoryOf(o.pid),
    diskMiB: { actors: mib(actors), tenancy: mib(tenancy), total: mib(total) },
    ...(redis ? { redisBytesPerConversation: (redisAfter - redisBefore) / Math.max(1, created), redisUsedMiB: mib(redisAfter) } : {}),
    turnP50Ms: s.p50,
    turnP99Ms: s.p99,
    troupeCpuUsPerRequest: (cpu * 1e6) / Math.max(1, created + turns),
  };
}
