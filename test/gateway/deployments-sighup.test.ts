// SIGHUP reload of the deployments file on a child-process Troupe
// (gateway/main.ts): calls keep flowing while the file is swapped from two
// deployments to a third one and the signal is sent; none fails, and the
// new deployment serves afterwards. Then an invalid file and another SIGHUP:
// the process keeps serving on the last good set.
import t from "tap";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startOpenAIFake } from "../fakes/openai-fake.ts";
import { projectWithLiveKey } from "../support/billing.ts";
import { gatewayProcess, killAndWait } from "../support/gateway-process.ts";
import { request, signup } from "../support/troupe.ts";
import { waitFor } from "../support/net.ts";

t.setTimeout(120_000);
const keys = ["sk-a", "sk-b", "sk-c"];
const fakes = await Promise.all(keys.map((apiKey) => startOpenAIFake({ apiKey })));
t.teardown(() => Promise.all(fakes.map((f) => f.close())));
const file = join(mkdtempSync(join(tmpdir(), "troupe-sighup-file-")), "deployments.json");
const write = (which: number[], extra: object = {}) =>
  writeFileSync(
    file,
    JSON.stringify({ deployments: which.map((i) => ({ name: `d${i}`, provider: "openai", api_key: keys[i], base_url: `${fakes[i]!.url}/v1`, ...extra })) }),
  );
write([0, 1]);
const { base, start } = await gatewayProcess("troupe-sighup-", { TROUPE_DEPLOYMENTS_FILE: file });
const child = await start();
t.teardown(() => void child.kill("SIGKILL"));
const r = { request: (m: string, p: string, o?: Parameters<typeof request>[3]) => request(base, m, p, o) };
const user = await signup(r, "sighup");
const p = await projectWithLiveKey(r, user.token, user.orgId);
const call = () =>
  fetch(`${base}/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${p.liveKey}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "gpt-4o-mini", routing_strategy: "manual", messages: [{ role: "user", content: "hello" }] }),
  }).then((res) => res.status);

t.test("calls sent during the SIGHUP all succeed; the new deployment serves after it", async (t) => {
  const statuses: number[] = [];
  let sending = true;
  const senders = Array.from({ length: 8 }, async () => {
    while (sending) statuses.push(await call());
  });
  await waitFor(async () => statuses.length >= 100, 20_000, "calls before the reload");
  write([2]);
  child.kill("SIGHUP");
  await waitFor(async () => fakes[2]!.requests.length >= 100, 20_000, "the new deployment to serve");
  sending = false;
  await Promise.all(senders);
  t.same(statuses.filter((s) => s !== 200), [], `none of ${statuses.length} calls failed`);
  t.ok(fakes[0]!.requests.length + fakes[1]!.requests.length >= 100, "the old deployments served before");
});

t.test("an invalid file at SIGHUP keeps the last good set", async (t) => {
  const before = fakes[2]!.requests.length;
  write([0], { weight: 0 });
  child.kill("SIGHUP");
  // The reload is asynchronous: give it time to read and refuse the file, then call.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const statuses = await Promise.all(Array.from({ length: 10 }, call));
  t.same(statuses, Array(10).fill(200));
  t.equal(fakes[2]!.requests.length, before + 10, "d2 still serves");
});

t.teardown(() => killAndWait(child, "SIGTERM").catch(() => undefined));
