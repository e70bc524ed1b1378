// A replica stopping in distributed mode hands its actors off before it
// refuses their calls: its actor callbacks' /healthz answers 503 at once (so
// daprd's app health check unregisters the types and placement moves the
// actors), while calls daprd still routes to it during ACTOR_HANDOFF_MS are
// served; only then are new calls refused. Real HTTP to the real callback
// server, with a real HTTP server standing in for daprd's state API.
import t from "tap";
import { startStubDaprHost } from "../../support/stub-dapr-host.ts";

async function startHost(handOffMs: number, options: { commitWaitMs?: number; holdWrites?: boolean } = {}) {
  const { host, base, closeStateApi } = await startStubDaprHost({ handOffMs, ...options });
  t.teardown(closeStateApi);
  const health = async () => (await fetch(`${base}/healthz`)).status;
  const increment = async (id: string) => {
    const res = await fetch(`${base}/actors/TestCounter/${id}/method/increment`, { method: "PUT", body: "{}" });
    return { status: res.status, body: await res.text() };
  };
  return { host, health, increment };
}

t.test("during the hand-off /healthz is 503 and calls are still served; after it, stop() ends", async (t) => {
  const { host, health, increment } = await startHost(800);
  t.equal(await health(), 200, "healthy while running");
  t.same(await increment("a"), { status: 200, body: "1" });
  const started = Date.now();
  const stopped = host.stop();
  await new Promise((r) => setTimeout(r, 100));
  t.equal(await health(), 503, "daprd's app health probe fails as soon as the replica stops");
  t.same(await increment("a"), { status: 200, body: "2" }, "a call routed here during the hand-off is served");
  t.same(await increment("b"), { status: 200, body: "1" }, "an actor first called during the hand-off too");
  await stopped;
  t.ok(Date.now() - started >= 800, `stop() waited for the hand-off (${Date.now() - started} ms)`);
});

t.test("without a hand-off the calls are refused at once", async (t) => {
  const { host, increment } = await startHost(0);
  t.equal((await increment("c")).status, 200);
  const stopped = host.stop();
  // stop() closes the listener as soon as the (idle) actors are; a call now is refused or fails to connect.
  const late = await increment("c").catch(() => ({ status: 0, body: "connection refused" }));
  t.not(late.status, 200, `refused: ${late.status} ${late.body.slice(0, 80)}`);
  await stopped;
});

t.test("a turn whose state write daprd holds does not hold the stop: past the commit wait it fails unsaved", async (t) => {
  const { host, increment } = await startHost(200, { commitWaitMs: 500, holdWrites: true });
  const turn = increment("d");
  await new Promise((r) => setTimeout(r, 100));
  const started = Date.now();
  await host.stop();
  const elapsed = Date.now() - started;
  t.ok(elapsed >= 700 && elapsed < 3_000, `stop() ended after the hand-off and the commit wait (${elapsed} ms)`);
  const answer = await turn;
  t.equal(answer.status, 500, "the turn failed");
  t.match(answer.body, /stopped before the turn could be saved/, "saying it was not saved");
});
