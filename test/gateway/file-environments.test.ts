// Files belong to the environment whose key made them, as jobs and
// conversations do: over HTTP, a development key (or a chat-only key of the
// same environment) cannot delete a production job's result file, which
// stays served while its job stays completed; the production key deletes it.
// A file stored before files recorded their environment is deleted by an
// owner or admin session only.
import { mkdtempSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { field, signup, startTestTroupe, str } from "../support/troupe.ts";

t.setTimeout(120_000);
const troupe = await startTestTroupe({ SIMULATED_VIDEO_DELAY_MS: "200", SIMULATED_VIDEO_DIR: mkdtempSync(join(tmpdir(), "troupe-simvid-")) });
t.teardown(() => troupe.stop());
const user = await signup(troupe, "file-envs");

async function newKey(environmentId: string, body: Record<string, unknown>): Promise<string> {
  const res = await troupe.request("POST", `/v1/environments/${environmentId}/api-keys`, { token: user.token, body });
  if (res.status !== 201) throw new Error(`key: ${res.status} ${res.text}`);
  return str(res.body, "key");
}
const prodKey = await newKey(user.productionEnvId, { name: "prod" });
const prodChatKey = await newKey(user.productionEnvId, { name: "prod-chat", scopes: ["chat"] });
const devKey = user.testKey;

const idOf = (url: string) => url.split("/").pop() ?? "";
const read = async (id: string) => (await fetch(`${troupe.url}/v1/files/${id}`)).status;
const del = (id: string, token: string) => troupe.request("DELETE", `/v1/files/${id}`, { token });

async function completedJob(token: string): Promise<{ id: string; resultUrl: string }> {
  const created = await troupe.request("POST", "/v1/video/generate", { token, body: { prompt: "a lighthouse", duration_seconds: 1 } });
  if (created.status !== 202) throw new Error(`job: ${created.status} ${created.text}`);
  const id = str(created.body, "job_id");
  for (let i = 0; i < 600; i++) {
    const got = await troupe.request("GET", `/v1/jobs/${id}`, { token });
    if (field(got.body, "status") === "completed") return { id, resultUrl: str(got.body, "result_url") };
    if (field(got.body, "status") === "failed") throw new Error(`job failed: ${got.text}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`job ${id} did not complete`);
}

t.test("a production job's result file: another environment's key gets 404 and the file survives", async (t) => {
  const job = await completedJob(prodKey);
  const fileId = idOf(job.resultUrl);
  t.equal(await read(fileId), 200, "served by its URL (the id is the capability)");

  const byDev = await del(fileId, devKey);
  t.equal(byDev.status, 404, "the development key cannot delete it");
  t.equal(field(byDev.body, "error", "code"), "not_found");
  t.equal(field(byDev.body, "error", "message"), `no file ${fileId}`, "the words an unknown id gets");

  const byChat = await del(fileId, prodChatKey);
  t.equal(byChat.status, 403, "a chat-only key of the production environment cannot delete a video result");
  t.equal(field(byChat.body, "error", "code"), "insufficient_scope");
  t.match(field(byChat.body, "error", "details"), { required_scope: "video", key_scopes: ["chat"] });

  t.equal(await read(fileId), 200, "the result file survives");
  const still = await troupe.request("GET", `/v1/jobs/${job.id}`, { token: prodKey });
  t.equal(field(still.body, "status"), "completed");
  t.equal(field(still.body, "result_url"), job.resultUrl);

  const byProd = await del(fileId, prodKey);
  t.equal(byProd.status, 200, "the production key deletes it");
  t.same(byProd.body, { id: fileId, deleted: true });
  t.equal(await read(fileId), 404);
});

t.test("a development file is the development key's: the production key gets 404", async (t) => {
  const speech = await troupe.request("POST", "/v1/audio/speech", { token: devKey, body: { model: "simulated-speech", voice: "alto", text: "dev only" } });
  t.equal(speech.status, 200, speech.text);
  const fileId = idOf(str(speech.body, "audio"));
  t.equal((await del(fileId, prodKey)).status, 404, "another environment's file does not exist for the key");
  t.equal(await read(fileId), 200);
  t.equal((await del(fileId, devKey)).status, 200, "its own environment's key deletes it");
  t.equal(await read(fileId), 404);
});

t.test("a file stored before files recorded their environment: no key deletes it, an owner session does", async (t) => {
  const speech = await troupe.request("POST", "/v1/audio/speech", { token: prodKey, body: { model: "simulated-speech", voice: "alto", text: "older" } });
  const fileId = idOf(str(speech.body, "audio"));
  // Rewrite its record as an earlier release wrote it: no environment, no scope.
  const path = join(troupe.dataDir, "files", fileId.slice(5, 7), `${fileId}.json`);
  const record = JSON.parse(await readFile(path, "utf8").catch(async () => "{}")) as Record<string, unknown>;
  t.ok(record["environment_id"], "a new file records its environment");
  delete record["environment_id"];
  delete record["scope"];
  await writeFile(path, JSON.stringify(record));

  const byProd = await del(fileId, prodKey);
  t.equal(byProd.status, 403, "not even a key of the environment that probably made it");
  t.equal(field(byProd.body, "error", "code"), "forbidden");
  t.equal((await del(fileId, devKey)).status, 403);
  t.equal(await read(fileId), 200, "still served as before");
  const bySession = await troupe.request("DELETE", `/v1/files/${fileId}`, { token: user.token});
  t.equal(bySession.status, 200, bySession.text);
  t.equal(await read(fileId), 404);
});
