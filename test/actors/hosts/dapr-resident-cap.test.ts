// ACTOR_MAX_RESIDENT in Dapr mode: beyond it, the Dapr host drops the least
// recently used in-memory copies that are between turns (daprd deactivates
// idle actors only at its own pace); the next call reads the state through
// daprd again. Real HTTP to the real callback server; a stand-in state API
// keeps what is written.
import t from "tap";
import { startStubDaprHost } from "../../support/stub-dapr-host.ts";
import { waitFor } from "../../support/net.ts";

t.test("the least recently used idle copies leave memory beyond maxResident; their state is read again", async (t) => {
  const { host, base, reads, closeStateApi } = await startStubDaprHost({ keepState: true, maxResident: 3 });
  t.teardown(async () => {
    await host.stop();
    await closeStateApi();
  });
  const call = async (id: string, method: string, body: unknown) => {
    const res = await fetch(`${base}/actors/TestCounter/${id}/method/${method}`, { method: "PUT", body: JSON.stringify(body) });
    t.equal(res.status, 200, `${method} ${id}`);
    return (await res.json()) as unknown;
  };
  const resident = async () => ((await (await fetch(`${base}/troupe/active-actors`)).json()) as Record<string, string[]>)["TestCounter"] ?? [];

  for (const [i, id] of ["a", "b", "c"].entries()) await call(id, "increment", { by: i + 1 });
  t.same(await resident(), ["a", "b", "c"], "three resident, at the cap");
  await call("a", "increment", { by: 10 }); // a is now the most recently used
  await call("d", "increment", { by: 4 });
  await waitFor(async () => (await resident()).length === 3, 2_000, "the copies over the cap to leave");
  t.same(await resident(), ["a", "c", "d"], "b, the least recently used, left memory; a, called since, stayed");

  const readsOfB = reads.get("TestCounter/b") ?? 0;
  t.equal(await call("b", "increment", { by: 100 }), 102, "b answers from its stored state (2 + 100)");
  t.equal(reads.get("TestCounter/b"), readsOfB + 1, "its state was read through daprd again");

  // A copy in a turn is never dropped, however old.
  const sleeping = fetch(`${base}/actors/TestCounter/z/method/sleep`, { method: "PUT", body: "600" });
  await waitFor(async () => (await resident()).includes("z"), 2_000, "z to be active");
  for (const id of ["e", "f", "g", "h"]) await call(id, "increment", {});
  await new Promise((resolve) => setTimeout(resolve, 300));
  const during = await resident();
  t.ok(during.includes("z"), `z, mid-turn, stays resident (${during.join(", ")})`);
  t.equal((await sleeping).status, 200, "its turn completes");
  await call("i", "increment", {});
  await waitFor(async () => (await resident()).length === 3, 2_000, "the copies over the cap to leave");
  t.notOk((await resident()).includes("z"), "z, idle now and the least recently called, left when i came");
});
