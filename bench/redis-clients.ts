// `npm run bench:redis-clients`: ioredis (what Troupe uses) against
// node-redis (the `redis` package, 6.x) on the two Redis paths that sit
// under live traffic, side by side in one run against one redis-server:
//
// - "rate-limit script": the rate limiter's Lua script (tenancy/
//   redis-data-store.ts `hitScript`) by EVALSHA, one call at a time
//   (round-trip latency) and 64 in flight (calls per second);
// - "revocation pub/sub": a PUBLISH on one connection until the message
//   reaches a SUBSCRIBE on another (how a revoked key reaches every replica).
//
// The clients take turns for BENCH_ROUNDS rounds so a noisy neighbour hits
// both alike. Prints a table and one JSON line. Environment: BENCH_ROUNDS (3),
// BENCH_CALLS (5000), REDIS_URL (use this Redis instead of starting one).
import { Redis } from "ioredis";
import { createClient } from "redis";
import { z } from "zod";
import { hitScript } from "../tenancy/redis-data-store.ts";
import { startTestRedis } from "../test/support/redis.ts";
import { fmt, summarize } from "../load/stats.ts";

const env = z
  .object({
    BENCH_ROUNDS: z.coerce.number().int().min(1).default(3),
    BENCH_CALLS: z.coerce.number().int().min(100).default(5_000),
  })
  .parse(process.env);

/** What a client must do for the bench: the script by its SHA, and a publish seen by a subscriber. */
interface BenchClient {
  name: string;
  hit(sha: string, key: string): Promise<unknown>;
  publish(channel: string, message: string): Promise<unknown>;
  subscribe(channel: string, onMessage: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

async function ioredisClient(url: string): Promise<BenchClient> {
  const redis = new Redis(url, { lazyConnect: true });
  const sub = new Redis(url, { lazyConnect: true });
  await Promise.all([redis.connect(), sub.connect()]);
  return {
    name: "ioredis 5",
    hit: (sha, key) => redis.evalsha(sha, 1, key, 60_000, 1),
    publish: (channel, message) => redis.publish(channel, message),
    subscribe: async (channel, onMessage) => {
      sub.on("message", (_channel: string, message: string) => onMessage(message));
      await sub.subscribe(channel);
    },
    close: async () => {
      redis.disconnect();
      sub.disconnect();
    },
  };
}

async function nodeRedisClient(url: string): Promise<BenchClient> {
  const redis = createClient({ url });
  await redis.connect();
  const sub = redis.duplicate();
  await sub.connect();
  return {
    name: "node-redis 6",
    hit: (sha, key) => redis.evalSha(sha, { keys: [key], arguments: ["60000", "1"] }),
    publish: (channel, message) => redis.publish(channel, message),
    subscribe: (channel, onMessage) => sub.subscribe(channel, onMessage),
    close: async () => {
      await Promise.all([redis.quit(), sub.quit()]);
    },
  };
}

interface RoundFigures {
  scriptP50Us: number;
  scriptP99Us: number;
  scriptPerSecond: number;
  pubsubP50Us: number;
  pubsubP99Us: number;
}

const toUs = (ms: number): number => ms * 1000;

async function sequentialScript(client: BenchClient, sha: string, calls: number): Promise<{ p50: number; p99: number }> {
  const latencies: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    await client.hit(sha, `bench:rl:${i % 64}`);
    latencies.push(performance.now() - started);
  }
  return summarize(latencies);
}

async function concurrentScript(client: BenchClient, sha: string, calls: number, inFlight = 64): Promise<number> {
  let next = 0;
  const started = performance.now();
  const worker = async (): Promise<void> => {
    while (next < calls) {
      next += 1;
      await client.hit(sha, `bench:rl:${next % 64}`);
    }
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
  return calls / ((performance.now() - started) / 1000);
}

async function pubsubLatency(client: BenchClient, messages: number): Promise<{ p50: number; p99: number }> {
  const channel = `bench:revoked:${client.name}:${Math.random()}`;
  let waiting: ((message: string) => void) | undefined;
  await client.subscribe(channel, (message) => waiting?.(message));
  const latencies: number[] = [];
  for (let i = 0; i < messages; i++) {
    const started = performance.now();
    const received = new Promise<string>((resolve) => (waiting = resolve));
    await client.publish(channel, `key_${i}`);
    const message = await received;
    if (message !== `key_${i}`) throw new Error(`${client.name}: expected key_${i}, got ${message}`);
    latencies.push(performance.now() - started);
  }
  return summarize(latencies);
}

async function measure(client: BenchClient, sha: string): Promise<RoundFigures> {
  await sequentialScript(client, sha, 500); // warm-up
  const sequential = await sequentialScript(client, sha, env.BENCH_CALLS);
  const perSecond = await concurrentScript(client, sha, env.BENCH_CALLS * 4);
  const pubsub = await pubsubLatency(client, Math.max(100, env.BENCH_CALLS / 5));
  return { scriptP50Us: toUs(sequential.p50), scriptP99Us: toUs(sequential.p99), scriptPerSecond: perSecond, pubsubP50Us: toUs(pubsub.p50), pubsubP99Us: toUs(pubsub.p99) };
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;

const redis = await startTestRedis();
try {
  const loader = new Redis(redis.url);
  const sha = String(await loader.script("LOAD", hitScript));
  loader.disconnect();
  const makers = [ioredisClient, nodeRedisClient];
  const figures = new Map<string, RoundFigures[]>();
  for (let round = 1; round <= env.BENCH_ROUNDS; round++) {
    for (const make of round % 2 === 1 ? makers : [...makers].reverse()) {
      const client = await make(redis.url);
      const result = await measure(client, sha);
      await client.close();
      figures.set(client.name, [...(figures.get(client.name) ?? []), result]);
      console.log(`round ${round} ${client.name}: script p50 ${fmt(result.scriptP50Us, 0)} µs, ${fmt(result.scriptPerSecond, 0)}/s at 64 in flight; pub/sub p50 ${fmt(result.pubsubP50Us, 0)} µs`);
    }
  }
  console.log("\nmedian of rounds | script p50 µs | script p99 µs | script calls/s (64 in flight) | pub/sub p50 µs | pub/sub p99 µs");
  const summary: Record<string, Record<string, number>> = {};
  for (const [name, rounds] of figures) {
    const pick = (f: (r: RoundFigures) => number): number => median(rounds.map(f));
    const row = {
      scriptP50Us: pick((r) => r.scriptP50Us),
      scriptP99Us: pick((r) => r.scriptP99Us),
      scriptPerSecond: pick((r) => r.scriptPerSecond),
      pubsubP50Us: pick((r) => r.pubsubP50Us),
      pubsubP99Us: pick((r) => r.pubsubP99Us),
    };
    summary[name] = row;
    console.log(`${name} | ${fmt(row.scriptP50Us, 0)} | ${fmt(row.scriptP99Us, 0)} | ${fmt(row.scriptPerSecond, 0)} | ${fmt(row.pubsubP50Us, 0)} | ${fmt(row.pubsubP99Us, 0)}`);
  }
  console.log(JSON.stringify({ bench: "redis-clients", rounds: env.BENCH_ROUNDS, calls: env.BENCH_CALLS, summary }));
} finally {
  await redis.stop();
}
