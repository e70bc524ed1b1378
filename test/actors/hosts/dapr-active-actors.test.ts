// GET /troupe/active-actors on the Dapr host's callback port lists the ids of
// the actors in memory on this replica, by type: the rolling-restart bench
// reads it to know which conversations a stopping replica hosts. Real HTTP to
// the real callback server, with a real HTTP server standing in for daprd's
// state API.
import t from "tap";
import { startStubDaprHost } from "../../support/stub-dapr-host.ts";
import { testActors } from "../test-actors.ts";

t.test("lists the actors in memory by type; a deactivated one leaves the list", async (t) => {
  const { host, base, closeStateApi } = await startStubDaprHost();
  t.teardown(async () => {
    await host.stop();
    await closeStateApi();
  });
  const active = async () => {
    const res = await fetch(`${base}/troupe/active-actors`);
    t.equal(res.status, 200);
    return (await res.json()) as Record<string, string[]>;
  };
  const before = await active();
  t.same(Object.keys(before).sort(), testActors.map((d) => d.type).sort(), "one entry per registered type");
  t.ok(Object.values(before).every((ids) => ids.length === 0), "none active before any call");

  for (const id of ["b", "a"]) {
    const res = await fetch(`${base}/actors/TestCounter/${id}/method/increment`, { method: "PUT", body: "{}" });
    t.equal(res.status, 200, `increment ${id}`);
  }
  t.same((await active())["TestCounter"], ["a", "b"], "both counters, sorted");

  t.equal((await fetch(`${base}/actors/TestCounter/a`, { method: "DELETE" })).status, 200, "daprd deactivates a");
  t.same((await active())["TestCounter"], ["b"], "a moved away: only b is hosted here");
});
