// Fake video providers on real HTTP (127.0.0.1) speaking Runway's and
// Luma's wire formats: submit → task id → polls (not finished for
// `pollsBeforeDone` polls) → a real MP4 (rendered once with ffmpeg) served
// at the task's output URL; DELETE cancels. Knobs: statuses for the next API
// calls (429 with Retry-After, 500…), tasks that end failed, tasks the
// provider "loses" (404 on poll), submissions accepted but never answered
// (a crash cutting the answer off), and the submissions per prompt (a job
// resumed after a crash must not submit a segment twice). Luma also lists
// the account's generations, newest first.
import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import { listenOnLoopback } from "../support/net.ts";

export interface VideoFakeCall {
  method: string;
  path: string;
  headers: IncomingMessage["headers"];
  json?: Record<string, unknown> | undefined;
}

export interface FakeTask {
  id: string;
  prompt: string;
  body: Record<string, unknown>;
  polls: number;
  outcome: "succeed" | "fail";
  cancelled: boolean;
  /** Accepted at, ms since the epoch. */
  createdAt: number;
}

export interface VideoFake {
  url: string;
  /** Every API call (downloads excluded). */
  calls: VideoFakeCall[];
  tasks: Map<string, FakeTask>;
  /** Consumed one per API call: answer this status instead (with Retry-After when given). */
  apiFaults: { status: number; retryAfter?: string }[];
  /** Polls that answer "not finished" before a task is done (default 1). */
  pollsBeforeDone: number;
  /** Consumed one per submission: how that task ends (default succeed). */
  outcomes: ("succeed" | "fail")[];
  /** Task ids answered 404 from now on, as if the provider expired them. */
  lost: Set<string>;
  /** Prompts whose submissions are accepted (task made, counted) but never answered: the request hangs until the fake closes. */
  unanswered: Set<string>;
  /** How many times each prompt was submitted. */
  submissions(prompt: string): number;
  /** MP4 downloads served. */
  downloads: number;
  close(): Promise<void>;
}

let mp4Cache: Buffer | undefined;
/** A real 1 s H.264 MP4 (320x180, 24 fps), rendered once per process. */
export function fakeMp4(): Buffer {
  mp4Cache ??= execFileSync("ffmpeg", [
    "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=24:duration=1",
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "frag_keyframe+empty_moov", "-f", "mp4", "pipe:1",
  ]);
  return mp4Cache;
}

interface Dialect {
  /** Answers a submission, or an error [status, body] when the request is malformed. */
  checkSubmit(path: string, call: VideoFakeCall): { prompt: string } | [number, unknown];
  /** The answer to a GET of `path` that lists tasks (newest first), or undefined when the provider has no such list. */
  list?(path: string, query: URLSearchParams, newestFirst: FakeTask[], videoUrl: (task: FakeTask) => string): [number, unknown] | undefined;
  submitted(task: FakeTask): [number, unknown];
  taskPath(path: string): string | undefined;
  /** The task's JSON: not finished, succeeded with `videoUrl`, failed or cancelled. */
  render(task: FakeTask, videoUrl: string, done: boolean): unknown;
  authorized(headers: IncomingMessage["headers"]): boolean;
  error(status: number, message: string): unknown;
}

async function startVideoFake(dialect: Dialect): Promise<VideoFake> {
  const counts = new Map<string, number>();
  const fake: VideoFake = {
    url: "",
    calls: [],
    tasks: new Map(),
    apiFaults: [],
    pollsBeforeDone: 1,
    outcomes: [],
    lost: new Set(),
    unanswered: new Set(),
    submissions: (prompt) => counts.get(prompt) ?? 0,
    downloads: 0,
    close: async () => undefined,
  };
  const hanging = new Set<ServerResponse>();
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
    status === 204 ? res.writeHead(204, headers).end() : res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body));

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = new URL(req.url ?? "/", "http://fake");
      const path = url.pathname;
      const outputId = /^\/outputs\/([^/]+)\.mp4$/.exec(path)?.[1];
      if (req.method === "GET" && outputId) {
        if (!fake.tasks.has(outputId)) return send(res, 404, { error: "no such output" });
        fake.downloads += 1;
        const mp4 = fakeMp4();
        return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(mp4.length) }).end(mp4);
      }
      const text = Buffer.concat(chunks).toString("utf8");
      let json: Record<string, unknown> | undefined;
      try {
        json = text ? (JSON.parse(text) as Record<string, unknown>) : undefined;
      } catch {
        return send(res, 400, dialect.error(400, "invalid JSON"));
      }
      const call: VideoFakeCall = { method: req.method ?? "", path, headers: req.headers, json };
      fake.calls.push(call);
      const fault = fake.apiFaults.shift();
      if (fault) return send(res, fault.status, dialect.error(fault.status, `injected ${fault.status}`), fault.retryAfter ? { "retry-after": fault.retryAfter } : {});
      if (!dialect.authorized(req.headers)) return send(res, 401, dialect.error(401, "invalid API key"));

      if (req.method === "GET" && dialect.list) {
        const listed = dialect.list(path, url.searchParams, [...fake.tasks.values()].reverse(), (task) => `${fake.url}/outputs/${task.id}.mp4`);
        if (listed) return send(res, listed[0], listed[1]);
      }
      const taskId = dialect.taskPath(path);
      if (taskId !== undefined && (req.method === "GET" || req.method === "DELETE")) {
        const task = fake.tasks.get(taskId);
        if (!task || fake.lost.has(taskId)) return send(res, 404, dialect.error(404, "task not found"));
        if (req.method === "DELETE") {
          task.cancelled = true;
          return send(res, 204, undefined);
        }
        task.polls += 1;
        return send(res, 200, dialect.render(task, `${fake.url}/outputs/${task.id}.mp4`, task.polls > fake.pollsBeforeDone));
      }
      if (req.method === "POST") {
        const checked = dialect.checkSubmit(path, call);
        if (Array.isArray(checked)) return send(res, checked[0], checked[1]);
        const task: FakeTask = {
          id: randomBytes(8).toString("hex"),
          prompt: checked.prompt,
          body: json ?? {},
          polls: 0,
          outcome: fake.outcomes.shift() ?? "succeed",
          cancelled: false,
          createdAt: Date.now(),
        };
        fake.tasks.set(task.id, task);
        counts.set(task.prompt, (counts.get(task.prompt) ?? 0) + 1);
        if (fake.unanswered.has(task.prompt)) return hanging.add(res);
        const [status, body] = dialect.submitted(task);
        return send(res, status, body);
      }
      send(res, 404, dialect.error(404, `no fake for ${req.method} ${path}`));
    });
  });
  let closeServer: () => Promise<void>;
  ({ url: fake.url, close: closeServer } = await listenOnLoopback(server));
  fake.close = async () => {
    for (const res of hanging) res.destroy();
    await closeServer();
  };
  return fake;
}

/** Runway: /v1/image_to_video, /v1/text_to_video, /v1/tasks/{id}; Bearer key and X-Runway-Version required. */
export function startRunwayFake(apiKey: string): Promise<VideoFake> {
  const ratios = new Set(["1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672"]);
  return startVideoFake({
    authorized: (h) => h.authorization === `Bearer ${apiKey}`,
    error: (_status, message) => ({ error: message }),
    taskPath: (path) => /^\/v1\/tasks\/([^/]+)$/.exec(path)?.[1],
    checkSubmit: (path, call) => {
      if (!call.headers["x-runway-version"]) return [400, { error: "X-Runway-Version header is required" }];
      const b = call.json ?? {};
      if (path !== "/v1/image_to_video" && path !== "/v1/text_to_video") return [404, { error: "not found" }];
      if (typeof b["model"] !== "string" || typeof b["promptText"] !== "string") return [400, { error: "model and promptText are required" }];
      if (path === "/v1/image_to_video" && (typeof b["promptImage"] !== "string" || !/^(https?:|data:image\/)/.test(b["promptImage"]))) {
        return [400, { error: "promptImage must be an HTTPS URL or an image data URI" }];
      }
      if (path === "/v1/text_to_video" && b["model"] === "gen4_turbo") return [400, { error: "gen4_turbo does not support text_to_video" }];
      if (b["duration"] !== 5 && b["duration"] !== 10) return [400, { error: "duration must be 5 or 10" }];
      if (!ratios.has(String(b["ratio"]))) return [400, { error: "invalid ratio" }];
      return { prompt: b["promptText"] };
    },
    submitted: (task) => [200, { id: task.id }],
    render: (task, videoUrl, done) => {
      const base = { id: task.id, createdAt: new Date().toISOString() };
      if (task.cancelled) return { ...base, status: "CANCELLED" };
      if (!done) return task.polls === 1 ? { ...base, status: "PENDING" } : { ...base, status: "RUNNING", progress: 0.5 };
      if (task.outcome === "fail") return { ...base, status: "FAILED", failure: "The prompt was flagged by moderation", failureCode: "SAFETY.INPUT.TEXT" };
      return { ...base, status: "SUCCEEDED", output: [videoUrl] };
    },
  });
}

/** Luma: /dream-machine/v1/generations and /dream-machine/v1/generations/{id}; Bearer key required. */
export function startLumaFake(apiKey: string): Promise<VideoFake> {
  return startVideoFake({
    authorized: (h) => h.authorization === `Bearer ${apiKey}`,
    error: (_status, message) => ({ detail: message }),
    taskPath: (path) => /^\/dream-machine\/v1\/generations\/([^/]+)$/.exec(path)?.[1],
    checkSubmit: (path, call) => {
      if (path !== "/dream-machine/v1/generations") return [404, { detail: "Not Found" }];
      const b = call.json ?? {};
      if (typeof b["prompt"] !== "string" || typeof b["model"] !== "string") return [400, { detail: "prompt and model are required" }];
      if (b["duration"] !== "5s" && b["duration"] !== "9s") return [400, { detail: "duration must be 5s or 9s" }];
      const frame0 = (b["keyframes"] as { frame0?: { type?: unknown; url?: unknown } } | undefined)?.frame0;
      if (b["keyframes"] !== undefined && (frame0?.type !== "image" || typeof frame0.url !== "string")) return [400, { detail: "keyframes.frame0 must be {type: image, url}" }];
      return { prompt: b["prompt"] };
    },
    submitted: (task) => [201, { id: task.id, state: "queued", failure_reason: null, created_at: new Date(task.createdAt).toISOString(), assets: null, model: task.body["model"], request: task.body }],
    list: (path, query, newestFirst, videoUrl) => {
      if (path !== "/dream-machine/v1/generations") return undefined;
      const limit = Number(query.get("limit") ?? 10);
      const offset = Number(query.get("offset") ?? 0);
      if (!Number.isInteger(limit) || limit < 1 || limit > 100 || !Number.isInteger(offset) || offset < 0) return [422, { detail: "limit must be 1..100, offset ≥ 0" }];
      const page = newestFirst.slice(offset, offset + limit).map((task) => renderLuma(task, videoUrl(task), false));
      return [200, { generations: page, has_more: offset + limit < newestFirst.length, count: page.length, limit, offset }];
    },
    render: renderLuma,
  });
}

/** A Luma generation object (listed ones report their state as of their last poll). */
function renderLuma(task: FakeTask, videoUrl: string, done: boolean): unknown {
  const base = { id: task.id, created_at: new Date(task.createdAt).toISOString(), model: task.body["model"], request: task.body };
  if (task.cancelled || (done && task.outcome === "fail")) return { ...base, state: "failed", failure_reason: task.cancelled ? "cancelled by user" : "400: prompt not allowed", assets: null };
  if (!done) return { ...base, state: task.polls <= 1 ? "queued" : "dreaming", failure_reason: null, assets: null };
  return { ...base, state: "completed", failure_reason: null, assets: { video: videoUrl, image: `${videoUrl}.jpg` } };
}
