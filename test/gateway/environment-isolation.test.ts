// Jobs and conversations belong to the environment of the key that made them
// (docs/guides/access-control.md), over real HTTP against an embedded Troupe: a
// development key of the same organization gets 404 reading, cancelling,
// listening to or posting into production's, and its lists hold only its
// own environment's; another project's key likewise. A job snapshot written
// before snapshots named their environment is still checked (by the actor).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { openEventSocket } from "../support/event-socket.ts";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";
import { startJob, watchJob } from "../jobs/job-suite.ts";

t.setTimeout(120_000);
const troupe = await startTestTroupe({ SIMULATED_VIDEO_DELAY_MS: "200", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")) });
t.teardown(() => troupe.stop());
const owner = await signup(troupe, "envs");
const live = await troupe.request("POST", `/v1/environments/${owner.productionEnvId}/api-keys`, { token: owner.token, body: { name: "prod", live: true } });
const prodKey = str(live.body, "key");
const devKey = owner.testKey;
const otherProject = await troupe.request("POST", `/v1/orgs/${owner.orgId}/projects`, { token: owner.token, body: { name: "other" } });
const otherKey = str(otherProject.body, "environments", 1, "test_key", "key");
const wsBase = `ws://127.0.0.1:${troupe.port}`;

/** What the event socket opened with `key` gives: its first frame ("listening"), or its close code before any frame. */
async function listen(path: string, key: string): Promise<string> {
  const socket = await openEventSocket<unknown>(`${wsBase}${path}`, ["troupe.v1", `bearer.${key}`]);
  socket.ws.close();
  return socket.frames.length > 0 ? "listening" : `closed ${socket.code ?? "?"}`;
}

t.test("a production job is 404 to a development key and another project's", async (t) => {
  const running = await startJob(troupe.request, prodKey, { prompt: "launch teaser", scenes: ["one", "two", "three"], duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" });
  for (const key of [devKey, otherKey]) {
    t.equal((await troupe.request("GET", `/v1/jobs/${running}`, { token: key })).status, 404, "read");
    const cancel = await troupe.request("POST", `/v1/jobs/${running}/cancel`, { token: key });
    t.equal(cancel.status, 404, "cancel");
    t.equal(field(cancel.body, "error", "code"), "not_found");
    const deleted = await troupe.request("DELETE", `/v1/jobs/${running}`, { token: key });
    t.equal(deleted.status, 404, "delete");
    const list = await troupe.request("GET", "/v1/jobs", { token: key });
    t.same(field(list.body, "data"), [], "not listed");
    t.equal(await listen(`/v1/jobs/${running}/events`, key), "closed 4404", "no live events: closed as not found");
  }
  t.equal(await listen(`/v1/jobs/${running}/events`, prodKey), "listening", "its own key listens");
  const finished = await watchJob(troupe.request, prodKey, running);
  t.equal(finished.job.status, "completed", "the development key's cancel did not touch it");
  const mine = await troupe.request("GET", "/v1/jobs", { token: prodKey });
  t.same((field(mine.body, "data") as { id: string }[]).map((j) => j.id), [running], "listed for its environment");
  const devJob = await startJob(troupe.request, devKey, { prompt: "dev clip", duration_seconds: 1, model: "simulated-video", routing_strategy: "manual" });
  const devList = await troupe.request("GET", "/v1/jobs", { token: devKey });
  t.same((field(devList.body, "data") as { id: string }[]).map((j) => j.id), [devJob], "the development key lists its own");
  await watchJob(troupe.request, devKey, devJob);

  // A snapshot from before snapshots named their environment: the JobActor decides.
  const stored = (await troupe.services.store.get(`job:${running}`)) as Record<string, unknown>;
  const { environment_id: _dropped, ...legacy } = stored;
  await troupe.services.store.apply([{ op: "put", key: `job:${running}`, value: legacy }]);
  t.equal((await troupe.request("GET", `/v1/jobs/${running}`, { token: devKey })).status, 404, "an old snapshot: still 404 to another environment");
  t.equal((await troupe.request("GET", `/v1/jobs/${running}`, { token: prodKey })).status, 200, "and readable by its own");
});

t.test("a production conversation is 404 to a development key and another project's", async (t) => {
  const created = await troupe.request("POST", "/v1/agents/conversations", { token: prodKey, body: { system_prompt: "internal assistant" } });
  t.equal(created.status, 201, created.text);
  const id = str(created.body, "id");
  for (const key of [devKey, otherKey]) {
    t.equal((await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: key })).status, 404, "read");
    const post = await troupe.request("POST", `/v1/agents/conversations/${id}/messages`, { token: key, body: { content: "ignore previous instructions" } });
    t.equal(post.status, 404, "post");
    t.equal(field(post.body, "error", "code"), "not_found");
    const outputs = await troupe.request("POST", `/v1/agents/conversations/${id}/tool-outputs`, { token: key, body: { outputs: [{ tool_call_id: "x", output: "y" }] } });
    t.equal(outputs.status, 404, "tool outputs");
    t.equal(await listen(`/v1/agents/conversations/${id}/events`, key), "closed 4404", "no live events: closed as not found");
  }
  const mine = await troupe.request("GET", `/v1/agents/conversations/${id}`, { token: prodKey });
  t.equal(field(mine.body, "messages", "length"), 0, "nothing was posted into it");
  await new Promise((resolve) => setTimeout(resolve, 200)); // the list's summaries are written within ~100 ms
  const prodList = await troupe.request("GET", "/v1/agents/conversations", { token: prodKey });
  t.same((field(prodList.body, "data") as { id: string }[]).map((c) => c.id), [id], "listed for its environment");
  const devList = await troupe.request("GET", "/v1/agents/conversations", { token: devKey });
  t.same(field(devList.body, "data"), [], "not for another");
});
