// A batch input file checked line by line before it is stored (OpenAI's
// Batch API input format): each line one JSON object `{custom_id, method:
// "POST", url, body}`, custom_ids unique, every line for one endpoint. Errors
// name the line (1-based) and the field; at most `listed` are listed.
import { z } from "zod";
import { invalidRequest } from "../../../core/errors.ts";
import { batchEndpointValues } from "../../../actors/batch/types.ts";

/** The endpoints an OpenAI batch line may name (the Anthropic one is not a file's). */
export const openAiBatchUrls = ["/v1/chat/completions", "/v1/embeddings", "/v1/responses"] as const;

export const batchLineSchema = z
  .object({
    custom_id: z.string().min(1).max(512),
    method: z.literal("POST"),
    url: z.enum(openAiBatchUrls),
    body: z.record(z.string(), z.unknown()),
  })
  .strict();
export type BatchLine = z.infer<typeof batchLineSchema>;

const listed = 20;

/** The file's lines (blank trailing lines dropped), or a 400 naming each bad line. */
export function validateBatchJsonl(bytes: Buffer, maxLines: number): string[] {
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidRequest([{ path: "file", message: "the file is not UTF-8 text" }]);
  }
  const lines = text.split("\n").map((l) => l.replace(/\r$/, ""));
  while (lines.length > 0 && lines.at(-1)!.trim() === "") lines.pop();
  if (lines.length === 0) throw invalidRequest([{ path: "file", message: "the file has no lines" }]);
  if (lines.length > maxLines) throw invalidRequest([{ path: "file", message: `the file has ${lines.length} lines; a batch takes at most ${maxLines}` }]);
  const issues: { path: string; message: string }[] = [];
  const seen = new Set<string>();
  let url: string | undefined;
  for (let i = 0; i < lines.length && issues.length < listed; i++) {
    const where = `file.line ${i + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(lines[i]!);
    } catch {
      issues.push({ path: where, message: "not valid JSON" });
      continue;
    }
    const parsed = batchLineSchema.safeParse(value);
    if (!parsed.success) {
      for (const issue of parsed.error.issues.slice(0, 3)) issues.push({ path: [where, ...issue.path.map(String)].join("."), message: issue.message });
      continue;
    }
    if (seen.has(parsed.data.custom_id)) issues.push({ path: `${where}.custom_id`, message: `"${parsed.data.custom_id}" is used by an earlier line; custom_id must be unique` });
    seen.add(parsed.data.custom_id);
    url ??= parsed.data.url;
    if (parsed.data.url !== url) issues.push({ path: `${where}.url`, message: `every line of a batch calls one endpoint; line 1 calls ${url}` });
  }
  if (issues.length > 0) throw invalidRequest(issues);
  return lines;
}

/** The batch endpoint a file's lines call. */
export type OpenAiBatchUrl = (typeof openAiBatchUrls)[number];
export const runnableEndpoints: ReadonlySet<string> = new Set<string>(batchEndpointValues);
