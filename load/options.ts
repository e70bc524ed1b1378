// The load driver's flags: parsed from argv (`--name value` or
// `--name=value`), then validated with zod so a bad flag is refused before
// any request is sent, with a message that names it.
import { z } from "zod";

export const scenarios = ["chat", "embeddings", "agents"] as const;
export type Scenario = (typeof scenarios)[number];

const positive = (flag: string) => z.coerce.number({ error: `--${flag} must be a number` }).positive({ error: `--${flag} must be greater than 0` });

// `{turn}` is replaced by the turn's number: the simulated model derives its
// tool call ids from the user message, so the same message twice in one
// conversation would repeat ids, which Troupe refuses (400 invalid_request).
export const defaultScript = "remember: load test fact {turn}; then search_memory: load test; then call lookup {\"q\":\"load\"}; then answer";

const optionsSchema = z
  .strictObject(
    {
      url: z.url({ protocol: /^https?$/, error: "--url must be an absolute http(s) URL, e.g. http://127.0.0.1:8080" }),
      key: z.string({ error: "--key is required (a Troupe API key, trp_…)" }).min(1, { error: "--key must not be empty" }),
      scenario: z.enum(scenarios, { error: `--scenario must be one of ${scenarios.join(", ")}` }).default("chat"),
      model: z.string().min(1, { error: "--model must not be empty" }).optional(),
      rate: positive("rate").optional(),
      concurrency: z.coerce.number({ error: "--concurrency must be a number" }).int({ error: "--concurrency must be a whole number" }).positive({ error: "--concurrency must be greater than 0" }).max(10_000, { error: "--concurrency must be at most 10000" }).optional(),
      duration: positive("duration").max(86_400, { error: "--duration must be at most 86400 seconds" }).default(10),
      "ramp-up": z.coerce.number({ error: "--ramp-up must be a number" }).min(0, { error: "--ramp-up must be 0 or more" }).default(0),
      connections: z.coerce.number({ error: "--connections must be a number" }).int({ error: "--connections must be a whole number" }).positive({ error: "--connections must be greater than 0" }).max(10_000, { error: "--connections must be at most 10000" }).default(256),
      // undici times headers and bodies on a coarse clock (~0.5–1 s ticks): below 1 s a timeout would not mean what it says.
      timeout: z.coerce.number({ error: "--timeout must be a number" }).min(1, { error: "--timeout must be at least 1 (seconds)" }).default(30),
      prompt: z.string().min(1, { error: "--prompt must not be empty" }).default("Say hello to the load test"),
      "max-tokens": z.coerce.number({ error: "--max-tokens must be a number" }).int({ error: "--max-tokens must be a whole number" }).positive({ error: "--max-tokens must be greater than 0" }).optional(),
      turns: z.coerce.number({ error: "--turns must be a number" }).int({ error: "--turns must be a whole number" }).positive({ error: "--turns must be greater than 0" }).max(1000, { error: "--turns must be at most 1000" }).default(3),
      script: z.string().min(1, { error: "--script must not be empty" }).default(defaultScript),
      json: z.string().min(1, { error: "--json needs a file path" }).optional(),
      html: z.string().min(1, { error: "--html needs a file path" }).optional(),
      quiet: z.boolean().default(false),
    },
    { error: (issue) => (issue.code === "unrecognized_keys" ? `unknown flag ${issue.keys.map((k) => `--${k}`).join(", ")} (see --help)` : undefined) },
  )
  .refine((o) => (o.rate === undefined) !== (o.concurrency === undefined), { error: "give exactly one of --rate (open loop, per second) or --concurrency (closed loop)", path: ["rate"] })
  .refine((o) => o["ramp-up"] < o.duration, { error: "--ramp-up must be shorter than --duration", path: ["ramp-up"] });

export interface LoadOptions {
  url: string;
  key: string;
  scenario: Scenario;
  model: string;
  /** Open loop: requests (or, for agents, conversations) started per second. */
  rate: number | undefined;
  /** Closed loop: requests (or conversations) in flight. */
  concurrency: number | undefined;
  durationS: number;
  rampUpS: number;
  connections: number;
  timeoutS: number;
  prompt: string;
  maxTokens: number | undefined;
  turns: number;
  script: string;
  json: string | undefined;
  html: string | undefined;
  quiet: boolean;
}

const booleanFlags = new Set(["quiet"]);

/** `--a 1 --b=2 --quiet` into {a: "1", b: "2", quiet: true}; a value-less flag other than a boolean is an error. */
export function argvToRecord(argv: readonly string[]): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) throw new UsageError(`unexpected argument ${JSON.stringify(arg)}: flags look like --name value`);
    const [name, inline] = arg.slice(2).split(/=(.*)/s) as [string, string | undefined];
    if (booleanFlags.has(name)) {
      out[name] = inline === undefined ? true : inline !== "false";
      continue;
    }
    const value = inline ?? argv[i + 1];
    if (value === undefined || (inline === undefined && value.startsWith("--"))) throw new UsageError(`--${name} needs a value`);
    if (inline === undefined) i++;
    out[name] = value;
  }
  return out;
}

export class UsageError extends Error {}

export function parseOptions(argv: readonly string[]): LoadOptions {
  const parsed = optionsSchema.safeParse(argvToRecord(argv));
  if (!parsed.success) throw new UsageError(parsed.error.issues.map((i) => i.message).join("\n"));
  const o = parsed.data;
  return {
    url: o.url.replace(/\/+$/, ""),
    key: o.key,
    scenario: o.scenario,
    model: o.model ?? (o.scenario === "embeddings" ? "simulated-embed" : "simulated-chat"),
    rate: o.rate,
    concurrency: o.concurrency,
    durationS: o.duration,
    rampUpS: o["ramp-up"],
    connections: o.connections,
    timeoutS: o.timeout,
    prompt: o.prompt,
    maxTokens: o["max-tokens"],
    turns: o.turns,
    script: o.script,
    json: o.json,
    html: o.html,
    quiet: o.quiet,
  };
}

export const usage = `troupe-load: drive load at a Troupe and report what it answered.

  npm run load -- --url http://127.0.0.1:8080 --key $KEY --scenario chat --rate 200 --duration 30 --html report.html

  --url <url>           Troupe's base URL (required)
  --key <key>           an API key (required; agents need the agents scope)
  --scenario <name>     chat (default) | embeddings | agents
  --model <id>          any catalogue model (default simulated-chat, or simulated-embed)
  --rate <n>            open loop: n requests per second (agents: conversations started per second)
  --concurrency <n>     closed loop: n requests (agents: conversations) in flight
  --duration <s>        seconds of load, ramp-up included (default 10)
  --ramp-up <s>         seconds to climb linearly to --rate / --concurrency (default 0)
  --connections <n>     keep-alive connections at most (default 256)
  --timeout <s>         per-request timeout (default 30)
  --prompt <text>       chat message / embeddings input
  --max-tokens <n>      chat max_tokens
  --turns <n>           agents: user turns per conversation (default 3)
  --script <text>       agents: each turn's message (scripts the simulated model; {turn} → 1, 2, …)
  --json <file>         write the JSON report
  --html <file>         write the self-contained HTML report
  --quiet               no live progress line on stderr
`;
