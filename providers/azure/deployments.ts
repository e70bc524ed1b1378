// AZURE_OPENAI_DEPLOYMENTS: which deployment serves which model. On Azure a
// request names a deployment (the resource owner's name for a deployed
// model), not the model, so Troupe maps the catalogue's model name
// (upstream_model: gpt-4o, text-embedding-3-small) to it. Written as JSON
// ({"gpt-4o": "prod-4o"}) or as a comma list (gpt-4o=prod-4o,gpt-4o-mini=mini);
// a model not listed is called through a deployment named like the model.
import { z } from "zod";

const deploymentName = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, "a deployment name: letters, digits, _ . -");
const mapSchema = z.record(z.string().min(1), deploymentName);

export const deploymentsSetting = z
  .string()
  .default("")
  .transform((raw, ctx): Readonly<Record<string, string>> => {
    const text = raw.trim();
    if (text === "") return {};
    let candidate: unknown;
    if (text.startsWith("{")) {
      try {
        candidate = JSON.parse(text);
      } catch {
        ctx.addIssue({ code: "custom", message: "a JSON object {\"model\": \"deployment\"} or model=deployment,… pairs" });
        return z.NEVER;
      }
    } else {
      const pairs = text.split(",").map((p) => p.trim()).filter((p) => p.length > 0);
      const bad = pairs.find((p) => !/^[^=\s]+=[^=\s]+$/.test(p));
      if (bad !== undefined) {
        ctx.addIssue({ code: "custom", message: `"${bad}" is not model=deployment` });
        return z.NEVER;
      }
      candidate = Object.fromEntries(pairs.map((p) => p.split("=") as [string, string]));
    }
    const parsed = mapSchema.safeParse(candidate);
    if (!parsed.success) {
      ctx.addIssue({ code: "custom", message: z.prettifyError(parsed.error) });
      return z.NEVER;
    }
    return Object.freeze(parsed.data);
  });

/** The deployment that serves `model`: the mapped one, else one named like the model. */
export function deploymentFor(deployments: Readonly<Record<string, string>>, model: string): string {
  return deployments[model] ?? model;
}
