// A webhook's outbox is bounded (MAX_OUTBOX events waiting for delivery):
// a receiver that never answers must not grow one actor's state without
// limit. Past the bound an event is not taken: it gets a failed delivery
// record saying why, and nothing is sent; once an attempt finishes there is
// room again. The WebhookActor runs on the embedded host in process, its
// attempts captured instead of sent (the end-to-end files send them).
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomBytes } from "node:crypto";
import t from "tap";
import { createSecretBox } from "../../actors/webhooks/secret-box.ts";
import { systemClock } from "../../core/clock.ts";
import { prefixedId } from "../../core/ids.ts";
import { createLogger } from "../../core/log.ts";
import { eraseDefinition } from "../../actors/actor.ts";
import { callActor } from "../../actors/host.ts";
import { EmbeddedActorHost } from "../../actors/hosts/embedded/embedded-host.ts";
import { DeliveryLog } from "../../actors/webhooks/delivery-log.ts";
import { WebhookDirectory } from "../../actors/webhooks/directory.ts";
import type { DispatchedAttempt, EventPayload } from "../../actors/webhooks/types.ts";
import { createWebhookActor, MAX_OUTBOX } from "../../actors/webhooks/webhook-actor.ts";
import { EmbeddedDataStore } from "../../tenancy/embedded-data-store.ts";

t.setTimeout(60_000);

const org = "org_outbox";
const event = (n: number): EventPayload => ({ id: `evt_outbox_${n}_${process.pid}`, type: "job.completed", created_at: new Date().toISOString(), data: { n } });

t.test(`past ${MAX_OUTBOX} waiting events, an event is refused with a failed record and nothing is sent; a finished attempt makes room`, async (t) => {
  const dataDir = mkdtempSync(join(tmpdir(), "troupe-webhook-outbox-"));
  const store = new EmbeddedDataStore(dataDir, systemClock);
  const sent: DispatchedAttempt[] = [];
  const actor = createWebhookActor({
    dispatch: (_id, attempts) => sent.push(...attempts),
    directory: new WebhookDirectory(store),
    log: new DeliveryLog(store),
    // Attempts stay out (in flight, unanswered) for the whole test: a long lease.
    config: { timeoutMs: 120_000, retryScale: 1, maxDeliveries: 2 * MAX_OUTBOX, endpointsPerOrganization: 20, secretKey: undefined },
    secrets: createSecretBox(randomBytes(32)),
  });
  const host = new EmbeddedActorHost({ dataDir, idleTimeoutMs: 60_000, clock: systemClock, log: createLogger("silent") });
  host.register([eraseDefinition(actor)]);
  await host.start();
  t.teardown(async () => {
    await host.stop();
    await store.close();
  });
  const id = prefixedId("whk");
  await callActor(host, actor, id, "create", { organization_id: org, url: "http://127.0.0.1:9/hook", events: ["job.completed"], secret: "whsec_test" });
  const accept = async (events: EventPayload[]) => (await callActor(host, actor, id, "accept", { organization_id: org, events, results: [] })).accepted;

  const filling = Array.from({ length: MAX_OUTBOX }, (_, i) => event(i));
  t.equal((await accept(filling)).length, MAX_OUTBOX, `${MAX_OUTBOX} events taken`);
  t.equal(sent.length, MAX_OUTBOX, "each sent once, none answered yet");

  const over = event(MAX_OUTBOX);
  t.same(await accept([over]), [], "one more is not taken");
  t.equal(sent.length, MAX_OUTBOX, "and not sent");
  const [record] = (await callActor(host, actor, id, "deliveries", { organization_id: org, limit: 1, cursor: null })).data;
  t.match(record, { event_id: over.id, status: "failed", next_attempt_at: null, error: `dropped: ${MAX_OUTBOX} events were already waiting for this webhook` }, "its failed record says why");

  const answered = sent[0]!;
  await callActor(host, actor, id, "settle", { results: [{ delivery_id: answered.delivery_id, status: 200, error: null, retry_after: null, duration_ms: 1 }] });
  const next = event(MAX_OUTBOX + 1);
  t.same(await accept([next]), [next.id], "a finished attempt made room for one");
  t.equal(sent.at(-1)?.event.id, next.id, "which is sent");
  t.same(await accept([event(MAX_OUTBOX + 2)]), [], "and only one");
});
