// `node bench/key-create-quota.ts [--creates=20] [--redis=URL]`: what the
// exact API_KEYS_PER_PROJECT quota (core/quota-slots.ts) costs a key create,
// over real HTTP against an in-process Troupe (lmdb, or Redis with --redis).
// For each limit (API_KEYS_PER_PROJECT) and number of keys the project holds
// already, a fresh project is filled to that number, then `creates` more are
// timed one after another. Prints the median and p90 of a create and the
// data-store documents read per create (every getMany key counted): the
// quota reads all `capacity` slot holders, then the record of each held one.
import { performance } from "node:perf_hooks";
import { signup, startTestTroupe } from "../test/support/troupe.ts";

const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, "").split("=") as [string, string]));
const creates = Number(args.get("creates") ?? 20);
const redis = args.get("redis");
const runs = [
  { limit: 100, existing: 10 },
  { limit: 100, existing: 75 },
  { limit: 1000, existing: 10 },
  { limit: 1000, existing: 100 },
  { limit: 1000, existing: 900 },
];

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

console.log(`store: ${redis ? `redis (${redis})` : "lmdb"}; ${creates} timed creates per row`);
console.log("limit  existing  median ms  p90 ms  docs read/create");
for (const run of runs) {
  const troupe = await startTestTroupe({ API_KEYS_PER_PROJECT: String(run.limit), ...(redis ? { REDIS_URL: redis } : {}) });
  try {
    const store = troupe.services.store;
    let docsRead = 0;
    const getMany = store.getMany.bind(store);
    store.getMany = async (keys) => {
      docsRead += keys.length;
      return getMany(keys);
    };
    const user = await signup(troupe, `bench-${run.limit}-${run.existing}`);
    const create = () => troupe.request("POST", `/v1/environments/${user.productionEnvId}/api-keys`, { token: user.token, body: { name: "k", monthly_budget_usd: 5 } });
    for (let i = 0; i < run.existing; i++) {
      const res = await create();
      if (res.status !== 201) throw new Error(`filling: ${res.status} ${res.text}`);
    }
    const times: number[] = [];
    docsRead = 0;
    for (let i = 0; i < creates; i++) {
      const started = performance.now();
      const res = await create();
      times.push(performance.now() - started);
      if (res.status !== 201) throw new Error(`timed create: ${res.status} ${res.text}`);
    }
    times.sort((a, b) => a - b);
    console.log(`${String(run.limit).padStart(5)}  ${String(run.existing).padStart(8)}  ${quantile(times, 0.5).toFixed(2).padStart(9)}  ${quantile(times, 0.9).toFixed(2).padStart(6)}  ${(docsRead / creates).toFixed(0).padStart(16)}`);
  } finally {
    await troupe.stop();
  }
}
