// An organization's footprint, for the deletion tests: `populate` gives an
// organization one of everything (a second project, keys, a conversation, a
// video job with its result file, a speech file, vector records, a webhook
// with failed deliveries, an invitation), every piece carrying a unique
// marker; the scanners then read every store straight (not through Troupe)
// and report where any of the organization's ids or the marker still is.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { open } from "lmdb";
import { field, str, type TestResponse } from "./troupe.ts";

type Requester = (method: string, path: string, options?: { token?: string; body?: unknown }) => Promise<TestResponse>;

export interface Footprint {
  marker: string;
  /** Every id and text of the organization that must not survive its deletion. */
  needles: string[];
  fileIds: string[];
}

async function ok(res: Promise<TestResponse>, what: string, status = [200, 201, 202]): Promise<TestResponse> {
  const r = await res;
  if (!status.includes(r.status)) throw new Error(`${what}: ${r.status} ${r.text.slice(0, 300)}`);
  return r;
}

export async function populate(r: Requester, user: { token: string; orgId: string; projectId: string; productionEnvId: string; developmentEnvId: string; testKey: string; body: unknown }, marker: string): Promise<Footprint> {
  const session = user.token;
  const needles = [marker, user.orgId, user.projectId, user.productionEnvId, user.developmentEnvId, str(user.body, "environments", 1, "test_key", "id")];
  const project = await ok(r("POST", `/v1/orgs/${user.orgId}/projects`, { token: session, body: { name: `project ${marker}` } }), "project");
  needles.push(str(project.body, "project", "id"), ...(field(project.body, "environments") as { environment: { id: string } }[]).map((e) => e.environment.id));
  const live = await ok(r("POST", `/v1/environments/${user.productionEnvId}/api-keys`, { token: session, body: { name: `key ${marker}`, scopes: [], live: true } }), "live key");
  needles.push(str(live.body, "id"));
  const key = user.testKey;
  // Content logging on: the request log then keeps prompts and answers carrying the marker, which the erasure must remove too.
  await ok(r("PATCH", `/v1/projects/${user.projectId}/request-log`, { token: session, body: { content_logging: true } }), "request-log settings");
  await ok(r("POST", "/v1/chat/completions", { token: key, body: { model: "simulated-chat", messages: [{ role: "user", content: `chat ${marker}` }] } }), "chat");
  const invite = await ok(r("POST", `/v1/orgs/${user.orgId}/invitations`, { token: session, body: { email: `invitee-${marker.toLowerCase()}@example.test`, role: "admin" } }), "invitation");
  needles.push(str(invite.body, "invitation", "id"), `invitee-${marker.toLowerCase()}`);
  const webhook = await ok(r("POST", "/v1/webhooks", { token: key, body: { url: "http://127.0.0.1:9/hook", events: ["job.completed", "job.failed"] } }), "webhook");
  needles.push(str(webhook.body, "webhook", "id"), str(webhook.body, "secret"));
  const conversation = await ok(r("POST", "/v1/agents/conversations", { token: key, body: { model: "simulated-chat", system_prompt: `system ${marker}` } }), "conversation");
  const conversationId = str(conversation.body, "id");
  needles.push(conversationId);
  await ok(r("POST", `/v1/agents/conversations/${conversationId}/messages`, { token: key, body: { content: `hello ${marker}` } }), "message");
  await ok(r("POST", "/v1/embeddings/index", { token: key, body: { content: `note ${marker}`, metadata: { tag: marker } } }), "vector");
  const speech = await ok(r("POST", "/v1/audio/speech", { token: key, body: { text: `speech ${marker}`, voice: "soprano" } }), "speech");
  const fileIds = [str(speech.body, "audio").split("/").pop()!];
  const job = await ok(r("POST", "/v1/video/generate", { token: key, body: { prompt: `video ${marker}`, duration_seconds: 2 } }), "video job");
  const jobId = str(job.body, "job_id");
  needles.push(jobId);
  for (let i = 0; i < 200; i++) {
    const got = await r("GET", `/v1/jobs/${jobId}`, { token: key });
    const status = field(got.body, "status");
    if (status === "completed" || status === "failed") {
      const url = field(got.body, "result_url");
      if (typeof url === "string") fileIds.push(url.split("/").pop()!);
      break;
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  needles.push(...fileIds);
  return { marker, needles, fileIds };
}

export interface Hit {
  where: string;
  needle: string;
}

function hitsIn(bytes: Buffer, needles: readonly string[], where: string): Hit[] {
  return needles.filter((n) => bytes.includes(n)).map((needle) => ({ where, needle }));
}

/** Every lmdb database file under `dir` (data.mdb in a folder, or a file ending .mdb/.lmdb). */
function lmdbPaths(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    const path = join(dir, name);
    if (statSync(path).isFile() && /\.(mdb|lmdb)$/.test(name)) out.push(path);
  }
  return out;
}

/**
 * Reads every lmdb database under the data directory record by record (its
 * unnamed root and each named database, keys and values as raw bytes): what
 * the store holds, not pages lmdb has freed but not yet reused.
 */
export function scanLmdb(dataDir: string, needles: readonly string[]): Hit[] {
  const hits: Hit[] = [];
  for (const path of lmdbPaths(dataDir)) {
    const root = open({ path, readOnly: true, encoding: "binary", keyEncoding: "binary" });
    try {
      const names: string[] = [];
      for (const { key, value } of root.getRange()) {
        const k = Buffer.from(key as Uint8Array);
        hits.push(...hitsIn(Buffer.concat([k, Buffer.from(value as Uint8Array)]), needles, `${relative(dataDir, path)}: root`));
        names.push(k.toString("utf8"));
      }
      for (const name of names) {
        let db;
        try {
          db = root.openDB({ name, encoding: "binary", keyEncoding: "binary" });
        } catch {
          continue; // a root record that is not a named database
        }
        if (!db) continue;
        for (const { key, value } of db.getRange()) {
          hits.push(...hitsIn(Buffer.concat([Buffer.from(key as Uint8Array), Buffer.from(value as Uint8Array)]), needles, `${relative(dataDir, path)}: ${name}`));
        }
      }
    } finally {
      void root.close();
    }
  }
  return hits;
}

/** Every other file under the data directory (stored files, journals, keys), read whole. */
export function scanPlainFiles(dataDir: string, needles: readonly string[]): Hit[] {
  const hits: Hit[] = [];
  for (const name of readdirSync(dataDir, { recursive: true, encoding: "utf8" })) {
    const path = join(dataDir, name);
    if (!statSync(path).isFile() || /\.(mdb|lmdb)(-lock)?$/.test(name) || name.endsWith("lock.mdb")) continue;
    hits.push(...hitsIn(readFileSync(path), needles, name));
    hits.push(...needles.filter((n) => name.includes(n)).map((needle) => ({ where: `file name ${name}`, needle })));
  }
  return hits;
}
