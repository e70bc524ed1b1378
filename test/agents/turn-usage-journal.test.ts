// A turn's model calls are billed through the usage journal's grouped writes
// (UsageMeter.recordGrouped): concurrent turns share one write(2) instead of
// one each. The turn still goes on only once its call's record is on file,
// as when the write was synchronous: its next model step, its commit and its
// answer all come after the line is in the journal. On the embedded host in
// process, with the real recorder and journal and a scripted chat double.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { systemClock } from "../../core/clock.ts";
import { createLogger } from "../../core/log.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { callActor } from "../../actors/host.ts";
import { createActorHost } from "../../actors/hosts/create-host.ts";
import { createConversationActor } from "../../actors/conversation/conversation-actor.ts";
import { ConversationDirectory } from "../../actors/conversation/directory.ts";
import { loadConfig } from "../../gateway/config.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import type { ChatRequest } from "../../providers/chat-request.ts";
import type { ChatResult } from "../../providers/types.ts";
import { UsageMeter } from "../../providers/usage.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";
import { readJournal, UsageJournal } from "../../tenancy/usage-journal.ts";
import { UsageRecorder } from "../../tenancy/usage-recorder.ts";
import type { OrgIndex } from "../../vectors/org-index.ts";
import { answer } from "../support/double-chat-answer.ts";

const dataDir = mkdtempSync(join(tmpdir(), "troupe-turn-usage-journal-"));
const journalDir = join(dataDir, "usage-journal");
const config = loadConfig({ TROUPE_DATA_DIR: dataDir, LOG_LEVEL: "silent" });
const log = createLogger("silent");
const store = new EmbeddedDataStore(dataDir, systemClock);
// The ledger's flush never runs here (schedule does nothing): what is on file is the journal's doing alone.
const recorder = new UsageRecorder(async () => undefined, log, { schedule: () => () => undefined, journal: new UsageJournal(journalDir, log) });
const meter = new UsageMeter(Catalogue.load(), recorder);
const onFile = (): string[] => readJournal(journalDir).records.map((r) => r.usage_key);

/** Per turn (its user message names its request id): what was on file when its second model call began. */
const seenAtSecondStep = new Map<string, string[]>();
async function chat(request: ChatRequest): Promise<ChatResult> {
  const last = request.messages.at(-1);
  // An undeclared tool: the turn answers it with an error and calls the model again.
  if (last?.role === "user") return answer("let me look", [{ id: "call-1", name: "no_such_tool", arguments: {} }]);
  seenAtSecondStep.set(String(request.messages.find((m) => m.role === "user")?.content), onFile());
  return answer("done");
}

const conversation = createConversationActor({
  chat,
  recordUsage: (payer, requestId, category, figures, call) => meter.recordGrouped({ ...payer, request_id: requestId, call }, category, figures),
  // The memory tools are never called by this script.
  memory: undefined as unknown as OrgIndex,
  directory: new ConversationDirectory(store, () => undefined),
  events: { publish: () => undefined, listen: async () => async () => undefined },
});
const host = await createActorHost({ mode: "embedded", dataDir, actors: config.actors, clock: systemClock, log });
host.register([eraseDefinition(conversation)]);
await host.start();
t.teardown(async () => {
  await host.stop();
  await recorder.close();
  await store.close();
});

const owner = { organization_id: "org_1", project_id: "prj_1", environment_id: "env_1" };
const payer = { ...owner, api_key_id: "key_1", live: true };

t.test("each model call's record is on file before the turn's next step, and before it answers", async (t) => {
  const ids = ["00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"];
  for (const id of ids) await callActor(host, conversation, id, "create", { owner, model: null, routing_strategy: "auto", system_prompt: "", tools: [] });
  // Three turns at once: their records share the journal's grouped writes.
  const answered = await Promise.all(
    ids.map(async (id, i) => {
      const result = await callActor(host, conversation, id, "postMessage", { organization_id: "org_1", content: `req-${i}`, payer, request_id: `req-${i}` });
      return { request: `req-${i}`, onFile: onFile(), status: result.status };
    }),
  );
  for (const a of answered) {
    const seen = seenAtSecondStep.get(a.request) ?? [];
    t.ok(seen.includes(`${a.request}#0`), `${a.request}'s second model step began with its first call on file (on file: ${seen.join(", ") || "nothing"})`);
    t.equal(a.status, "idle");
    t.ok(a.onFile.includes(`${a.request}#0`) && a.onFile.includes(`${a.request}#1`), `${a.request} answered with both its calls on file`);
  }
  t.same(onFile().sort(), ["req-0#0", "req-0#1", "req-1#0", "req-1#1", "req-2#0", "req-2#1"], "each call recorded once");
});
