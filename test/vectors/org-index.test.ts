// OrgIndex, the one path /v1/embeddings/index and the agents' `remember` tool
// share: a record over the caps is refused before the embedding is paid for,
// and `remember` meets the same caps and the same quota, as an error result
// the model can read.
import t from "tap";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { systemClock } from "../../core/clock.ts";
import { TroupeError } from "../../core/errors.ts";
import { runBuiltinTool } from "../../actors/conversation/builtin-tools.ts";
import { EmbeddedVectorIndex } from "../../vectors/embedded-vector-index.ts";
import { OrgIndex } from "../../vectors/org-index.ts";
import { defaultVectorLimits } from "../../vectors/vector-index.ts";

t.test("caps before the embedding call; remember meets the same caps and quota", async (t) => {
  const directory = await mkdtemp(join(tmpdir(), "troupe-org-index-"));
  const index = new EmbeddedVectorIndex({ directory, model: "m", dimensions: 4, kernel: "js", limits: { ...defaultVectorLimits, quotaPerOrganization: 2 } });
  await index.open();
  t.teardown(async () => {
    await index.close();
    await rm(directory, { recursive: true, force: true });
  });
  let embedded = 0;
  const orgIndex = new OrgIndex({ index, embed: async (texts) => texts.map(() => (embedded++, [1, 0.5, 0.25, 0.125])), clock: systemClock });

  try {
    await orgIndex.add("org", "fine content", { pad: "x".repeat(20_000) });
    t.fail("oversized metadata accepted");
  } catch (error) {
    t.equal((error as TroupeError).code, "invalid_request");
    t.match((error as TroupeError).details, [{ path: /^body\.metadata$/, message: /at most 16384 bytes/ }]);
  }
  t.equal(embedded, 0, "nothing was embedded for the refused record");

  // One turn's context: the memories remember accepts wait in `unstored` until the turn commits.
  const ctx = { memory: orgIndex, organizationId: "org", conversationId: "conv-1", call: { id: "call-1", position: 1 }, unstored: [] };
  const tooBig = JSON.parse(await runBuiltinTool("remember", { content: "日".repeat(30_000) }, ctx)) as { error?: string };
  t.match(tooBig.error, /content: must be at most 65536 bytes/, "remember: the content cap, as an error the model reads");
  t.equal(embedded, 0);

  t.match(JSON.parse(await runBuiltinTool("remember", { content: "first fact" }, ctx)), { stored: true });
  await orgIndex.add("org", "second record", {});
  const pending = JSON.parse(await runBuiltinTool("remember", { content: "second fact" }, { ...ctx, call: { id: "call-2", position: 3 } })) as { error?: string };
  t.match(pending.error, /holds 1 records and its quota is 2; adding 2 more/, "remember: the turn's memories not stored yet count against the quota");
  t.equal(embedded, 2, "the refused memory was not embedded");

  await orgIndex.store(ctx.unstored.splice(0));
  const full = JSON.parse(await runBuiltinTool("remember", { content: "third fact" }, ctx)) as { error?: string };
  t.match(full.error, /holds 2 records and its quota is 2/, "remember: the organization's quota");
  t.equal(index.count("org"), 2, "nothing stored past the quota");
});
