// Codex CLI (@openai/codex, pinned, unmodified: its native binary from the
// optional platform package) headless — `codex exec --json` — against an
// embedded Troupe's /openai/v1 Responses API, on a GPT, a Claude and a Gemini
// model (each through its fake). Codex is configured only as its docs say
// for a custom provider: a temporary CODEX_HOME whose config.toml names
// `model_providers.troupe` (base_url <troupe>/openai/v1, env_key TROUPE_KEY,
// wire_api "responses"), analytics and update checks off, retries off, and
// the two tools that are not functions left out (`web_search = "disabled"`:
// Google-style hosted search; `[agents] enabled = false`: the namespace of
// sub-agent tools). It runs in a temporary directory with `--sandbox
// read-only` and `--ephemeral`, so it can touch neither the repository nor
// the machine's Codex state. One run per model asks for a tool: the fake
// calls Codex's exec_command with `cat note.txt`, Codex runs it, sends the
// output back, and the answer quotes it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import t from "tap";
import { startCompatHarness } from "./openai-harness.ts";

t.setTimeout(240_000);
const codex = resolve("node_modules/.bin/codex");
// A missing client is a failure, never a skip (CI installs it from package-lock.json).
if (!existsSync(codex)) throw new Error(`Codex CLI is not installed at ${codex}: run npm ci`);

const h = await startCompatHarness();
const scratch = await mkdtemp(join(tmpdir(), "troupe-codex-"));
t.teardown(async () => {
  await h.stop();
  await rm(scratch, { recursive: true, force: true });
});

const models = { openai: "gpt-4.1-mini", anthropic: "claude-haiku-4-5", gemini: "gemini-2.5-flash" } as const;

type CodexEvent = { type: string; item?: { type: string; text?: string; command?: string; aggregated_output?: string; exit_code?: number | null; status?: string }; usage?: { input_tokens: number; output_tokens: number } };

/** One `codex exec --json` run in its own CODEX_HOME, HOME and working directory; its JSONL events. */
async function codexExec(model: string, prompt: string, cwd: string): Promise<CodexEvent[]> {
  const home = join(cwd, ".codex-home");
  await mkdir(home, { recursive: true });
  await writeFile(
    join(home, "config.toml"),
    [
      `model = "${model}"`,
      `model_provider = "troupe"`,
      `web_search = "disabled"`,
      `check_for_update_on_startup = false`,
      `[model_providers.troupe]`,
      `name = "Troupe"`,
      `base_url = "${h.baseURL}"`,
      `env_key = "TROUPE_KEY"`,
      `wire_api = "responses"`,
      `request_max_retries = 0`,
      `stream_max_retries = 0`,
      `[agents]`,
      `enabled = false`,
      `[features]`,
      `goals = false`,
      `[analytics]`,
      `enabled = false`,
    ].join("\n"),
  );
  // Nothing of the machine's environment that could point Codex elsewhere or sign it in.
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: join(cwd, ".home"), CODEX_HOME: home, TROUPE_KEY: h.user.testKey };
  const args = ["exec", "--json", "--skip-git-repo-check", "--ephemeral", "--sandbox", "read-only", "-C", cwd, prompt];
  const stdout = await new Promise<string>((done, fail) => {
    const child = execFile(codex, args, { cwd, env, timeout: 120_000, maxBuffer: 16 << 20 }, (error, out, err) => {
      if (error) fail(new Error(`codex exited: ${error.message}\n${out}\n${err}`));
      else done(out);
    });
    // codex exec reads stdin as more of the prompt when it is a pipe: none here.
    child.stdin?.end();
  });
  return stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as CodexEvent);
}

const messages = (events: CodexEvent[]): string[] => events.flatMap((e) => (e.type === "item.completed" && e.item?.type === "agent_message" ? [e.item.text ?? ""] : []));

for (const [provider, model] of Object.entries(models)) {
  const fake = h.fakes[provider as keyof typeof models];

  t.test(`${provider} (${model}): codex exec answers`, async (t) => {
    const cwd = await mkdtemp(join(scratch, `${provider}-`));
    const before = fake.requests.length;
    const events = await codexExec(model, "say hello [[no tool]]", cwd);
    t.notOk(events.some((e) => e.type === "turn.failed" || e.type === "error"), `no failed turn: ${JSON.stringify(events.filter((e) => e.type === "error" || e.type === "turn.failed"))}`);
    // Codex sends its environment context as a user message before the prompt; Claude's and Gemini's APIs join consecutive user turns, so their echo starts with it.
    t.match(messages(events), [/^Echo: [\s\S]*say hello \[\[no tool\]\]$/], "one answer: the fake's echo, ending with the prompt");
    const done = events.find((e) => e.type === "turn.completed");
    t.ok((done?.usage?.input_tokens ?? 0) > 0 && (done?.usage?.output_tokens ?? 0) > 0, "usage from the Responses API");
    t.ok(fake.requests.length > before, `the ${provider} fake answered`);
  });

  t.test(`${provider} (${model}): codex exec runs a shell command and reads its output back`, async (t) => {
    const cwd = await mkdtemp(join(scratch, `${provider}-tool-`));
    await writeFile(join(cwd, "note.txt"), `the ${provider} secret is ${provider.length * 7}\n`);
    const events = await codexExec(model, `What does note.txt say? [[tool:exec_command {"cmd":"cat note.txt"}]]`, cwd);
    const command = events.find((e) => e.type === "item.completed" && e.item?.type === "command_execution")?.item;
    t.match(command, { command: /cat note\.txt/, exit_code: 0, status: "completed", aggregated_output: `the ${provider} secret is ${provider.length * 7}\n` }, "Codex ran the call the model made");
    t.match(messages(events).at(-1), `the ${provider} secret is ${provider.length * 7}`, "the answer quotes the command's output, sent back as the call's output");
    t.ok(events.some((e) => e.type === "turn.completed"), "the turn completed");
  });
}
