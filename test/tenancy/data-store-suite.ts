// One suite for every DataStore implementation (embedded and Redis).
import type { Test } from "tap";
import { ClaimTakenError, type DataStore } from "../../core/data-store.ts";
import { waitFor } from "../support/net.ts";

export interface StoreFactory {
  name: string;
  /** A fresh, empty store. */
  create(): Promise<DataStore>;
  /** Closes and reopens the same data (restart persistence). */
  reopen(store: DataStore): Promise<DataStore>;
}

export function storeSuite(t: Test, factory: StoreFactory): void {
  t.test(`${factory.name}: put, get, getMany, delete`, async (t) => {
    const store = await factory.create();
    await store.apply([
      { op: "put", key: "a", value: { n: 1, s: "x" } },
      { op: "put", key: "b", value: [1, 2] },
    ]);
    t.same(await store.get("a"), { n: 1, s: "x" });
    t.same(await store.getMany(["b", "missing", "a"]), [[1, 2], undefined, { n: 1, s: "x" }]);
    await store.apply([{ op: "delete", key: "a" }]);
    t.equal(await store.get("a"), undefined);
    await store.close();
  });

  t.test(`${factory.name}: a taken claim fails the whole batch`, async (t) => {
    const store = await factory.create();
    await store.apply([{ op: "claim", key: "email:x", value: "u1" }]);
    await t.rejects(
      store.apply([
        { op: "put", key: "user:u2", value: { id: "u2" } },
        { op: "index", key: "users", member: "u2", score: 1 },
        { op: "claim", key: "email:x", value: "u2" },
      ]),
      ClaimTakenError,
    );
    t.equal(await store.get("user:u2"), undefined, "nothing half-written");
    t.same((await store.page("users", 10)).members, []);
    t.equal(await store.lookup("email:x"), "u1");
    await store.apply([{ op: "release", key: "email:x" }]);
    t.equal(await store.lookup("email:x"), undefined);
    await store.close();
  });

  t.test(`${factory.name}: concurrent claims, exactly one wins`, async (t) => {
    const store = await factory.create();
    const results = await Promise.allSettled(Array.from({ length: 20 }, (_, i) => store.apply([{ op: "claim", key: "race", value: `v${i}` }])));
    t.equal(results.filter((r) => r.status === "fulfilled").length, 1);
    await store.close();
  });

  t.test(`${factory.name}: index pages newest first with a cursor`, async (t) => {
    const store = await factory.create();
    const ops = Array.from({ length: 25 }, (_, i) => ({ op: "index" as const, key: "list", member: `m${String(i).padStart(2, "0")}`, score: 1000 + Math.floor(i / 2) }));
    await store.apply(ops);
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page = await store.page("list", 7, cursor);
      seen.push(...page.members);
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor && pages < 10);
    t.equal(pages, 4);
    t.equal(seen.length, 25);
    t.equal(new Set(seen).size, 25, "no duplicates across pages, even with equal scores");
    t.equal(seen[0], "m24", "newest first");
    t.equal(seen[24], "m00");
    t.equal((await store.page("list", 25)).nextCursor, null, "a page holding exactly the rest has no next cursor");
    await store.apply([{ op: "unindex", key: "list", member: "m24" }]);
    t.equal((await store.page("list", 1)).members[0], "m23");
    await store.close();
  });

  t.test(`${factory.name}: documents with a ttl expire`, async (t) => {
    const store = await factory.create();
    await store.apply([{ op: "put", key: "session", value: { ok: true }, ttlMs: 150 }]);
    t.same(await store.get("session"), { ok: true });
    await new Promise((r) => setTimeout(r, 300));
    t.equal(await store.get("session"), undefined);
    await store.close();
  });

  t.test(`${factory.name}: fixed-window counters`, async (t) => {
    const store = await factory.create();
    const counts: number[] = [];
    for (let i = 0; i < 5; i++) counts.push((await store.hit("k", 60_000)).count);
    t.same(counts, [1, 2, 3, 4, 5]);
    const { resetInMs } = await store.hit("k", 60_000);
    t.ok(resetInMs > 0 && resetInMs <= 60_000, `reset in ${resetInMs} ms`);
    const short = await store.hit("short", 100);
    t.equal(short.count, 1);
    await new Promise((r) => setTimeout(r, 200));
    t.equal((await store.hit("short", 100)).count, 1, "window reset");
    t.equal((await store.hit("tokens", 60_000, 250)).count, 250, "adds `by` (tokens)");
    t.equal((await store.hit("tokens", 60_000, 0)).count, 250, "0 reads");
    t.equal((await store.hit("tokens", 60_000, 50)).count, 300);
    await store.close();
  });

  t.test(`${factory.name}: backoff admits the free attempts, then waits double each time up to the cap`, async (t) => {
    const store = await factory.create();
    const policy = { free: 3, baseMs: 1_000, capMs: 4_000, forgetMs: 60_000 };
    const t0 = 1_000_000;
    for (let i = 1; i <= 3; i++) t.same(await store.backoffAttempt("acct", policy, t0), { admitted: true, retryInMs: 0, attempts: i });
    t.same(await store.backoffAttempt("acct", policy, t0 + 400), { admitted: false, retryInMs: 600, attempts: 3 }, "4th waits 1 s after the 3rd");
    t.ok((await store.backoffAttempt("acct", policy, t0 + 1_000)).admitted);
    t.same(await store.backoffAttempt("acct", policy, t0 + 2_999), { admitted: false, retryInMs: 1, attempts: 4 }, "then 2 s");
    t.ok((await store.backoffAttempt("acct", policy, t0 + 3_000)).admitted);
    t.ok((await store.backoffAttempt("acct", policy, t0 + 7_000)).admitted, "then 4 s");
    t.same(await store.backoffAttempt("acct", policy, t0 + 10_000), { admitted: false, retryInMs: 1_000, attempts: 6 }, "capped at 4 s, not 8 s");
    t.ok((await store.backoffAttempt("other", policy, t0 + 7_001)).admitted, "keys are independent");
    await store.backoffRefund("acct");
    await store.backoffRefund("acct");
    t.same(await store.backoffAttempt("acct", policy, t0 + 10_000), { admitted: true, retryInMs: 0, attempts: 5 }, "two refunds: 4 attempts owe 2 s, long past");
    await store.backoffClear("acct");
    t.same(await store.backoffAttempt("acct", policy, t0 + 10_001), { admitted: true, retryInMs: 0, attempts: 1 }, "cleared");
    await store.backoffRefund("never-seen");
    await store.close();
  });

  t.test(`${factory.name}: backoff forgets after forgetMs and counts parallel attempts exactly`, async (t) => {
    const store = await factory.create();
    const policy = { free: 2, baseMs: 60_000, capMs: 60_000, forgetMs: 150 };
    const now = Date.now();
    const results = await Promise.all(Array.from({ length: 10 }, () => store.backoffAttempt("burst", policy, now)));
    t.equal(results.filter((r) => r.admitted).length, 2, "a burst of 10 parallel attempts gets only the 2 free ones");
    await new Promise((r) => setTimeout(r, 300));
    t.ok((await store.backoffAttempt("burst", policy, now + 300)).admitted, "forgotten after forgetMs");
    await store.close();
  });

  t.test(`${factory.name}: publish reaches subscribers`, async (t) => {
    const store = await factory.create();
    let deliver: (message: string) => void = () => undefined;
    const got = new Promise<string>((resolve) => (deliver = resolve));
    // subscribe resolves once the subscription is in place (Redis acknowledged
    // SUBSCRIBE), so a publish after it is delivered; a fixed 50 ms wait was not
    // enough on a loaded machine.
    await store.subscribe("chan", (message) => deliver(message));
    await store.publish("chan", "hello");
    t.equal(await got, "hello");
    await store.close();
  });

  t.test(`${factory.name}: unsubscribe ends one handler's subscription`, async (t) => {
    const store = await factory.create();
    const kept: string[] = [];
    const dropped: string[] = [];
    const keep = (message: string): void => void kept.push(message);
    const drop = (message: string): void => void dropped.push(message);
    await store.subscribe("chan-u", keep);
    await store.subscribe("chan-u", drop);
    await store.unsubscribe("chan-u", drop);
    await store.publish("chan-u", "one");
    await waitFor(async () => kept.length === 1, 5000, "the kept handler's message");
    t.same(dropped, [], "the unsubscribed handler hears nothing");
    await store.unsubscribe("chan-u", keep);
    // Subscribed again after the last handler left: the channel is live again (Redis: UNSUBSCRIBE, then SUBSCRIBE, in order).
    const again: string[] = [];
    await store.subscribe("chan-u", (message) => void again.push(message));
    await store.publish("chan-u", "two");
    await waitFor(async () => again.length === 1, 5000, "the new handler's message");
    t.same(kept, ["one"], "the handler unsubscribed last hears nothing more");
    await store.close();
  });

  t.test(`${factory.name}: data survives a restart`, async (t) => {
    const store = await factory.create();
    await store.apply([
      { op: "put", key: "persist", value: { v: 42 } },
      { op: "claim", key: "unique", value: "id1" },
      { op: "index", key: "idx", member: "a", score: 5 },
    ]);
    const reopened = await factory.reopen(store);
    t.same(await reopened.get("persist"), { v: 42 });
    t.equal(await reopened.lookup("unique"), "id1");
    t.same((await reopened.page("idx", 5)).members, ["a"]);
    await reopened.close();
  });
}
