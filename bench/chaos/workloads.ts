// What the chaos run keeps busy while it breaks things. Each workload sends
// one request per step for a worker, says which of its resources must be
// reachable again after a fault, and checks its invariants at the end.
//
// The webhook and ledger audits (bench/chaos/audits.ts) read what these
// record: successes per workload (`succeeded`) and the jobs' final state.
import type { FinalJob } from "./audits.ts";
import { Balancer } from "./balancer.ts";
import { describeError } from "./steady-load.ts";

export interface Outcome {
  ok: boolean;
  /** Status and a short reason when not ok. */
  detail?: string;
  /** The replica that answered a billed call (the ledger audit allows for a killed replica's unflushed usage), or that a failed request was sent to. */
  replica?: number;
  /** The resource the request was for (an agent turn's conversation id): the rolling restart attributes failures to the replica hosting it. */
  resource?: string;
}

export interface Workload {
  readonly name: string;
  /** Creates what the steady load needs, before any fault. */
  prepare(client: Balancer, workers: number): Promise<void>;
  /** One request of steady load for `worker` (0 ≤ worker < workers). */
  step(client: Balancer, worker: number): Promise<Outcome>;
  /** Resources that must answer again after a fault; the ids of those that do not, and why the first did not. */
  unreachable(client: Balancer): Promise<{ total: number; failing: string[]; firstReason?: string }>;
  /** Invariants once the load stopped: one line per violation. */
  verify(client: Balancer): Promise<string[]>;
  /** Steps that succeeded (billed calls the ledger must hold). */
  readonly succeeded: number;
}

const failed = (status: number, body: unknown, replica?: number): Outcome => ({ ok: false, detail: `${status} ${JSON.stringify(body).slice(0, 400)}`, replica });

/** Stateless chat completions on a model whose provider the run makes fail (auto routing may fall back). */
export function chatWorkload(model: string): Workload {
  let sent = 0;
  let succeeded = 0;
  return {
    name: "chat",
    get succeeded() {
      return succeeded;
    },
    prepare: async () => {},
    step: async (client) => {
      const n = sent++;
      const res = await client.send("POST", "/v1/chat/completions", { model, messages: [{ role: "user", content: `say chat ${n}` }] });
      const content = (res.body as { content?: string }).content;
      if (res.status !== 200) return failed(res.status, res.body, res.replica);
      // The fakes echo the last user message: anything else is a wrong answer, not a success.
      if (content !== `Echo: say chat ${n}`) return { ok: false, detail: `200 with ${JSON.stringify(content)}`, replica: res.replica };
      succeeded++;
      return { ok: true, replica: res.replica };
    },
    unreachable: async () => ({ total: 0, failing: [] }),
    verify: async () => [],
  };
}

interface ConversationLedger {
  /** User messages whose turn answered 200: each must be in the history exactly once. */
  succeeded: string[];
  /** User messages whose turn failed: in the history at most once (the turn may have committed before its answer was lost). */
  failed: string[];
}

/** Agent conversations (ConversationActor): each worker takes turns on its share of them, one at a time. */
export function agentWorkload(model: string, conversations: number): Workload {
  const ids: string[] = [];
  const ledgers = new Map<string, ConversationLedger>();
  let workers = 1;
  const cursor = new Map<number, number>();
  let turn = 0;

  const mine = (worker: number): string[] => ids.filter((_, i) => i % workers === worker);
  const get = (client: Balancer, id: string) => client.send("GET", `/v1/agents/conversations/${id}`);

  return {
    name: "agents",
    get succeeded() {
      return [...ledgers.values()].reduce((n, l) => n + l.succeeded.length, 0);
    },
    prepare: async (client, agentWorkers) => {
      workers = Math.max(1, agentWorkers);
      for (let i = 0; i < conversations; i++) {
        const res = await client.send("POST", "/v1/agents/conversations", { model });
        const id = (res.body as { id?: string }).id;
        if (res.status !== 201 || !id) throw new Error(`creating conversation ${i}: ${res.status} ${JSON.stringify(res.body)}`);
        ids.push(id);
        ledgers.set(id, { succeeded: [], failed: [] });
      }
    },
    step: async (client, worker) => {
      const own = mine(worker);
      const index = cursor.get(worker) ?? 0;
      cursor.set(worker, index + 1);
      const id = own[index % own.length];
      if (!id) return { ok: true };
      const content = `turn ${turn++}`;
      const ledger = ledgers.get(id)!;
      try {
        const res = await client.send("POST", `/v1/agents/conversations/${id}/messages`, { content });
        const messages = (res.body as { messages?: { role: string; content: string }[] }).messages ?? [];
        const last = messages[messages.length - 1];
        // The fakes' model calls the first declared tool (a built-in here), then answers from its result.
        if (res.status === 200 && messages.some((m) => m.role === "user" && m.content === content) && last?.role === "assistant" && last.content.startsWith("Tool said:")) {
          ledger.succeeded.push(content);
          return { ok: true, replica: res.replica, resource: id };
        }
        ledger.failed.push(content);
        return { ...(res.status === 200 ? { ok: false, detail: `200 but last message ${JSON.stringify(last)}` } : failed(res.status, res.body)), replica: res.replica, resource: id };
      } catch (error) {
        ledger.failed.push(content);
        return { ok: false, detail: describeError(error), replica: Balancer.replicaOf(error), resource: id };
      }
    },
    unreachable: async (client) => {
      const answers = await Promise.all(
        ids.map((id) => get(client, id).then((r) => (r.status === 200 ? "" : `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`), (e: unknown) => String(e))),
      );
      return { total: ids.length, failing: ids.filter((_, i) => answers[i] !== ""), firstReason: answers.find((a) => a !== "") };
    },
    verify: async (client) => {
      const problems: string[] = [];
      for (const id of ids) {
        const res = await get(client, id);
        if (res.status !== 200) {
          problems.push(`conversation ${id}: GET answered ${res.status}`);
          continue;
        }
        const body = res.body as { status?: string; messages?: { role: string; content: string }[] };
        const users = (body.messages ?? []).filter((m) => m.role === "user").map((m) => m.content);
        const count = (c: string) => users.filter((u) => u === c).length;
        const ledger = ledgers.get(id)!;
        const lost = ledger.succeeded.filter((c) => count(c) === 0);
        const repeated = ledger.succeeded.filter((c) => count(c) > 1);
        const doubled = ledger.failed.filter((c) => count(c) > 1);
        const unknown = users.filter((u) => !ledger.succeeded.includes(u) && !ledger.failed.includes(u));
        if (lost.length) problems.push(`conversation ${id}: answered turns missing from its history: ${lost.join(", ")}`);
        if (repeated.length) problems.push(`conversation ${id}: answered turns in its history more than once: ${repeated.join(", ")}`);
        if (doubled.length) problems.push(`conversation ${id}: failed turns recorded twice: ${doubled.join(", ")}`);
        if (unknown.length) problems.push(`conversation ${id}: turns nobody sent: ${unknown.join(", ")}`);
        if (body.status !== "idle") problems.push(`conversation ${id}: status ${body.status} after the run (a turn left it stuck)`);
      }
      return problems;
    },
  };
}

/**
 * Video jobs (JobActor, simulated video provider rendered with ffmpeg): one
 * job submitted per step; every job must stay readable through the faults
 * and end `completed` (not failed, not stuck) once the load stops.
 */
export function videoJobWorkload(options: { pauseMs: number; completionTimeoutMs: number }): Workload & { readonly final: FinalJob[]; readonly lostSubmissions: number } {
  const jobs: string[] = [];
  const final = new Map<string, FinalJob>();
  let sent = 0;
  return {
    name: "video jobs",
    get succeeded() {
      return jobs.length;
    },
    /** Submissions whose answer was lost (the job may exist and end unseen by the run). */
    get lostSubmissions() {
      return sent - jobs.length;
    },
    /** The jobs that ended (completed or failed), as verify() last read them. */
    get final() {
      return [...final.values()];
    },
    prepare: async () => {},
    step: async (client) => {
      // Few jobs: each renders clips and composes them with ffmpeg on the replicas' shared cores.
      await new Promise((r) => setTimeout(r, options.pauseMs));
      const res = await client.send("POST", "/v1/video/generate", { prompt: `chaos job ${sent++}`, duration_seconds: 2 });
      const id = (res.body as { job_id?: string }).job_id;
      if (res.status !== 202 || !id) return failed(res.status, res.body);
      jobs.push(id);
      return { ok: true };
    },
    unreachable: async (client) => {
      const answers = await Promise.all(
        jobs.map((id) => client.send("GET", `/v1/jobs/${id}`).then((r) => (r.status === 200 ? "" : `${r.status} ${JSON.stringify(r.body).slice(0, 200)}`), (e: unknown) => String(e))),
      );
      return { total: jobs.length, failing: jobs.filter((_, i) => answers[i] !== ""), firstReason: answers.find((a) => a !== "") };
    },
    verify: async (client) => {
      const deadline = Date.now() + options.completionTimeoutMs;
      while (final.size < jobs.length && Date.now() < deadline) {
        for (const id of jobs.filter((j) => !final.has(j))) {
          const res = await client.send("GET", `/v1/jobs/${id}`).catch(() => undefined);
          const body = res?.body as { status?: string; segments?: { status: string }[]; error?: unknown } | undefined;
          if (body?.status === "completed" || body?.status === "failed") final.set(id, { id, status: body.status, segments: body.segments ?? [], error: body.error });
        }
        if (final.size < jobs.length) await new Promise((r) => setTimeout(r, 500));
      }
      const problems = jobs.filter((id) => final.get(id)?.status !== "completed").map((id) => `video job ${id}: ${final.get(id)?.status ?? "not final"} ${JSON.stringify(final.get(id)?.error ?? null)} ${final.has(id) ? "" : `after ${options.completionTimeoutMs / 1000} s`}`.trim());
      return problems;
    },
  };
}
