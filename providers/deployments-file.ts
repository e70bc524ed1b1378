// The upstream deployments file (docs/operations/deployments.md): several
// deployments of a provider, each its own credential, base URL, weight and
// rpm/tpm limits. JSON, since Troupe carries no YAML parser; its path is
// TROUPE_DEPLOYMENTS_FILE. Read at start and on SIGHUP; an error names the
// file and the field (deployments[2].weight: ...), so an operator can fix it.
import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { z } from "zod";

/** Providers a deployment may belong to: the HTTP chat/embedding providers whose settings are a key and a base URL. */
export const deployableProviders = ["openai", "anthropic", "gemini", "cohere", "mistral", "azure"] as const;
export type DeployableProvider = (typeof deployableProviders)[number];

/** Deployment names become metric labels and console rows: short, from the file only. */
const deploymentName = z.string().regex(/^[a-z0-9][a-z0-9_.-]{0,47}$/, "1-48 lowercase letters, digits, _ . - (starting with a letter or digit)");

export const deploymentSpecSchema = z
  .object({
    name: deploymentName,
    provider: z.enum(deployableProviders),
    api_key: z.string().min(1).max(4096),
    /** Default: the provider's base URL setting (for azure: AZURE_OPENAI_ENDPOINT). */
    base_url: z.url().optional(),
    /** Informational (console, metrics help); routing does not read it. */
    region: z.string().min(1).max(64).optional(),
    /** Azure only: model → Azure deployment name on this resource (else AZURE_OPENAI_DEPLOYMENTS' map; unlisted: named like the model). */
    azure_deployments: z.record(z.string().min(1).max(128), z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "an Azure deployment name")).optional(),
    weight: z.number().int().min(1).max(1000).default(1),
    /** Requests per minute this deployment takes; absent: no limit of its own. */
    rpm: z.number().int().min(1).optional(),
    /** Tokens (in + out) per minute; absent: no limit of its own. */
    tpm: z.number().int().min(1).optional(),
  })
  .strict()
  .refine((d) => d.azure_deployments === undefined || d.provider === "azure", { message: "azure_deployments applies to provider azure only", path: ["azure_deployments"] })
  .refine((d) => d.provider !== "azure" || d.base_url !== undefined, { message: "an azure deployment needs its resource endpoint (https://{resource}.openai.azure.com)", path: ["base_url"] });
export type DeploymentSpec = z.output<typeof deploymentSpecSchema>;

export const deploymentsFileSchema = z
  .object({ deployments: z.array(deploymentSpecSchema).min(1).max(256) })
  .strict()
  .superRefine((f, ctx) => {
    const seen = new Set<string>();
    f.deployments.forEach((d, i) => {
      if (seen.has(d.name)) ctx.addIssue({ code: "custom", path: ["deployments", i, "name"], message: `deployment name ${d.name} is used twice` });
      seen.add(d.name);
    });
  });
export type DeploymentsFile = z.output<typeof deploymentsFileSchema>;

/** A deployments file of more than this is refused before parsing (256 deployments fit in far less). */
export const maxDeploymentsFileBytes = 1 << 20;

export class DeploymentsFileError extends Error {
  override readonly name = "DeploymentsFileError";
}

/** Parses the file's text; throws DeploymentsFileError naming each bad field. */
export function parseDeploymentsFile(text: string, path: string): DeploymentsFile {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (e) {
    throw new DeploymentsFileError(`${path}: not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  const parsed = deploymentsFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`)).join("").replace(/^\./, "") || "(file)"}: ${i.message}`);
    throw new DeploymentsFileError(`${path}: ${issues.join("; ")}`);
  }
  return parsed.data;
}

/** Reads and parses the file (size bounded first). */
export async function readDeploymentsFile(path: string): Promise<DeploymentsFile> {
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (e) {
    throw new DeploymentsFileError(`${path}: cannot be read (${e instanceof Error ? e.message : String(e)})`);
  }
  if (size > maxDeploymentsFileBytes) throw new DeploymentsFileError(`${path}: ${size} bytes, more than the ${maxDeploymentsFileBytes} a deployments file may have`);
  return parseDeploymentsFile(await readFile(path, "utf8"), path);
}

/** The same, synchronously: only at start, before anything serves (createRouter is synchronous). */
export function readDeploymentsFileSync(path: string): DeploymentsFile {
  let size: number;
  try {
    size = statSync(path).size;
  } catch (e) {
    throw new DeploymentsFileError(`${path}: cannot be read (${e instanceof Error ? e.message : String(e)})`);
  }
  if (size > maxDeploymentsFileBytes) throw new DeploymentsFileError(`${path}: ${size} bytes, more than the ${maxDeploymentsFileBytes} a deployments file may have`);
  return parseDeploymentsFile(readFileSync(path, "utf8"), path);
}
