// Claude Code (@anthropic-ai/claude-code, pinned, unmodified) headless —
// `claude -p … --output-format json`, its defaults (thinking on, streaming,
// its whole tool list, cache_control, context_management, the beta client's
// ?beta=true) — against an embedded Troupe's /anthropic mount, on a Claude,
// a GPT and a Gemini model (each through its fake). Only the documented
// environment variables are set: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN),
// plus telemetry and updates off and a temporary HOME. One run per model
// asks for a tool: the fake calls Claude Code's Read tool, Claude Code reads
// the file and sends its content back, and the answer quotes it.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import t from "tap";
import { models, startCompatHarness } from "./anthropic-harness.ts";

t.setTimeout(240_000);
const cli = resolve("node_modules/@anthropic-ai/claude-code/cli-wrapper.cjs");
// A missing client is a failure, never a skip (CI installs it from package-lock.json).
if (!existsSync(cli)) throw new Error(`Claude Code is not installed at ${cli}: run npm ci`);

const h = await startCompatHarness();
const scratch = await mkdtemp(join(tmpdir(), "troupe-claude-code-"));
t.teardown(async () => {
  await h.stop();
  await rm(scratch, { recursive: true, force: true });
});

interface ClaudeResult {
  is_error: boolean;
  subtype: string;
  result: string;
  num_turns: number;
  usage: { input_tokens: number; output_tokens: number; cache_read_input_tokens?: number; cache_creation_input_tokens?: number };
}

/** One `claude -p` run in its own HOME and working directory; its JSON result. */
async function claude(model: string, prompt: string, cwd: string, keyVariable: "ANTHROPIC_API_KEY" | "ANTHROPIC_AUTH_TOKEN" = "ANTHROPIC_API_KEY"): Promise<ClaudeResult> {
  const home = join(cwd, ".home");
  await mkdir(home, { recursive: true });
  // Nothing of the machine's environment that could point Claude Code elsewhere or sign it in.
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: home,
    ANTHROPIC_BASE_URL: `${h.troupe.url}/anthropic`,
    [keyVariable]: h.liveKey,
    DISABLE_TELEMETRY: "1",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    DISABLE_AUTOUPDATER: "1",
  };
  const stdout = await new Promise<string>((done, fail) => {
    execFile(process.execPath, [cli, "-p", prompt, "--output-format", "json", "--model", model], { cwd, env, timeout: 120_000, maxBuffer: 16 << 20 }, (error, out, err) => {
      if (error && out === "") fail(new Error(`claude exited: ${error.message}\n${err}`));
      else done(out);
    });
  });
  return JSON.parse(stdout) as ClaudeResult;
}

for (const [provider, model] of Object.entries(models)) {
  t.test(`${provider} (${model}): claude -p answers`, async (t) => {
    const cwd = await mkdtemp(join(scratch, `${provider}-`));
    const before = h.fakes[provider as keyof typeof h.fakes].requests.length;
    const out = await claude(model, "say hello [[no tool]]", cwd);
    t.equal(out.is_error, false, `no error: ${out.result.slice(-300)}`);
    t.equal(out.subtype, "success");
    t.match(out.result, /say hello/, "the fake's echo of the prompt");
    t.ok(h.fakes[provider as keyof typeof h.fakes].requests.length > before, `the ${provider} fake answered`);
  });

  t.test(`${provider} (${model}): claude -p runs its Read tool and reads the result back`, async (t) => {
    const cwd = await mkdtemp(join(scratch, `${provider}-tool-`));
    const file = join(cwd, "note.txt");
    await writeFile(file, `the ${provider} secret is ${provider.length * 7}\n`);
    const out = await claude(model, `What does note.txt say? [[tool:Read {"file_path":${JSON.stringify(file)}}]]`, cwd);
    t.equal(out.is_error, false, `no error: ${out.result.slice(-300)}`);
    t.ok(out.num_turns >= 2, "a tool turn, then the answer");
    t.match(out.result, `the ${provider} secret is ${provider.length * 7}`, "the answer quotes what the Read tool returned");
    if (provider === "anthropic") {
      // Thinking on (Claude Code's default) reached Anthropic as a budget, and the answer's signed thinking came back with the tool result.
      const bodies = h.fakes.anthropic.requests.slice(-2).map((r) => r.body as { thinking?: unknown; messages: { role: string; content: unknown }[] });
      t.match(bodies[0]!.thinking, { type: "enabled", budget_tokens: Number }, "thinking sent to Anthropic");
      const assistant = bodies[1]!.messages.find((m) => m.role === "assistant");
      t.match(assistant?.content, [{ type: "thinking", thinking: String, signature: String }], "the thinking block went back first, signed (the fake checks the signature)");
    }
  });
}

t.test("ANTHROPIC_AUTH_TOKEN in place of ANTHROPIC_API_KEY (sent as Authorization: Bearer)", async (t) => {
  const cwd = await mkdtemp(join(scratch, "auth-token-"));
  const before = h.fakes.openai.requests.length;
  const out = await claude(models.openai, "say hello [[no tool]]", cwd, "ANTHROPIC_AUTH_TOKEN");
  t.equal(out.is_error, false, `no error: ${out.result.slice(-300)}`);
  t.match(out.result, /say hello/);
  t.ok(h.fakes.openai.requests.length > before);
});
