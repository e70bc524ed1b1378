#!/usr/bin/env node
// troupe-load (`npm run load -- …`): drives a scenario at a Troupe, open
// loop at --rate or closed loop at --concurrency, shows a live line on
// stderr, then prints a summary table and writes the JSON and HTML reports.
// Exit codes: 0 the run completed (its errors are in the report), 1 the
// target refused the preflight (bad key, unknown model), 2 a bad flag.
import { writeFileSync } from "node:fs";
import { TroupeClient } from "./client.ts";
import { htmlReport } from "./html-report.ts";
import { parseOptions, usage, UsageError, type LoadOptions } from "./options.ts";
import { startProgress } from "./progress.ts";
import { Recorder } from "./recorder.ts";
import { buildReport, summaryTable } from "./report.ts";
import { closedLoop, openLoop } from "./runner.ts";
import { iterationFor } from "./scenarios.ts";
import { terminalSafe } from "./terminal-text.ts";

class PreflightError extends Error {}

/** One GET /v1/models before the load: the key works and the model is in the catalogue. */
async function preflight(client: TroupeClient, options: LoadOptions): Promise<void> {
  const answer = await client.call("GET", "/v1/models");
  if (answer.status === 0) throw new PreflightError(`--url ${options.url}: no answer (${answer.code})`);
  if (answer.status === 401 || answer.status === 403) throw new PreflightError(`--key was refused by ${options.url}: ${answer.status} ${answer.code ?? ""}`.trim());
  if (answer.status !== 200) throw new PreflightError(`GET ${options.url}/v1/models answered ${answer.status} ${answer.code ?? ""}: is --url a Troupe?`);
  const data = (answer.body as { data?: { id?: unknown }[] } | undefined)?.data ?? [];
  const ids = data.map((m) => String(m.id));
  if (!ids.includes(options.model)) throw new PreflightError(`--model ${options.model} is not in the catalogue of ${options.url} (it has: ${ids.join(", ")})`);
}

export async function main(argv: readonly string[]): Promise<number> {
  if (argv.includes("--help") || argv.includes("-h")) {
    process.stdout.write(usage);
    return 0;
  }
  let options: LoadOptions;
  try {
    options = parseOptions(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`troupe-load: ${error.message}\n\n${usage}`);
    return 2;
  }
  const client = new TroupeClient(options.url, options.key, options.connections, options.timeoutS);
  try {
    await preflight(client, options);
  } catch (error) {
    if (!(error instanceof PreflightError)) throw error;
    process.stderr.write(`troupe-load: ${terminalSafe(error.message)}\n`);
    await client.close();
    return 1;
  }
  const recorder = new Recorder();
  const startedDate = new Date();
  const startedAt = performance.now();
  const stopProgress = process.stderr.isTTY && !options.quiet ? startProgress(recorder, startedAt, options.durationS) : () => {};
  const ctx = { client, recorder, iteration: iterationFor(options), options, startedAt };
  try {
    if (options.rate !== undefined) await openLoop(ctx, options.rate);
    else await closedLoop(ctx, options.concurrency ?? 1);
  } finally {
    stopProgress();
    await client.close();
  }
  const report = buildReport(options, recorder, startedDate, (performance.now() - startedAt) / 1000);
  process.stdout.write(summaryTable(report));
  if (options.json) writeFileSync(options.json, JSON.stringify(report, null, 2) + "\n");
  if (options.html) writeFileSync(options.html, htmlReport(report));
  return 0;
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
