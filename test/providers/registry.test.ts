// providers/registry.ts is the one list of providers; the Helm chart and the
// docs must keep up with it. A provider registered without its chart entries
// (values.schema.json for its plain settings, the chart README naming every
// setting, no secret accepted as a plain value) or its docs rows
// (docs/configuration.md, a row of docs/providers.md naming its settings)
// fails here; the last tests feed an extra descriptor to the same check to
// show it would. The registry's own guards (duplicate names, a shared
// variable declared differently, a folder model of another provider) are
// checked too.
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { z } from "zod";
import { settingNames } from "../../gateway/config.ts";
import { optionalString } from "../../core/env.ts";
import { Catalogue } from "../../providers/catalogue.ts";
import { defineProvider, type AnyProviderDescriptor } from "../../providers/descriptor.ts";
import { buildEnvShape, descriptors, providerEnvShape, providerSecretEnv } from "../../providers/registry.ts";

const root = join(import.meta.dirname, "../..");
const read = (path: string) => readFileSync(join(root, path), "utf8");

interface Files {
  valuesSchema: string;
  chartReadme: string;
  chartCheck: string;
  configuration: string;
  providers: string;
}

const files: Files = {
  valuesSchema: read("charts/troupe/values.schema.json"),
  chartReadme: read("charts/troupe/README.md"),
  chartCheck: read("scripts/chart-check.sh"),
  configuration: read("docs/configuration.md"),
  providers: read("docs/providers.md"),
};

/** First cells of table rows: | `NAME` | … | (docs/configuration.md's convention). */
function rowNames(markdown: string): string[] {
  return markdown.split("\n").flatMap((line) => {
    const m = /^\|\s*`([A-Za-z0-9_]+)`\s*\|/.exec(line);
    return m?.[1] !== undefined ? [m[1]] : [];
  });
}

/** Every disagreement between the descriptors and the chart and docs; empty when they agree. */
function registryProblems(list: readonly AnyProviderDescriptor[], f: Files): string[] {
  const problems: string[] = [];
  const schema = z.object({ properties: z.object({ config: z.object({ properties: z.record(z.string(), z.unknown()) }) }) }).parse(JSON.parse(f.valuesSchema));
  const inValues = Object.keys(schema.properties.config.properties);
  const derived = /^derived="([^"]*)"/m.exec(f.chartCheck)?.[1]?.split(" ") ?? [];
  const documented = rowNames(f.configuration);
  const providerRows = f.providers.split("\n").filter((l) => l.startsWith("| "));
  for (const d of list) {
    const secrets = new Set(d.secretEnv);
    const row = providerRows.find((l) => l.split("|")[1]?.trim() === d.title);
    if (!row) problems.push(`docs/providers.md has no table row for ${d.title}`);
    for (const name of Object.keys(d.env)) {
      const where = `${d.name}: ${name}`;
      if (secrets.has(name) && inValues.includes(name)) problems.push(`${where} is a secret but values.schema.json accepts it as a plain value`);
      if (!secrets.has(name) && !inValues.includes(name)) problems.push(`${where} is missing from charts/troupe/values.schema.json config`);
      if (derived.includes(name)) problems.push(`${where} is in chart-check.sh's derived list (the chart does not derive provider settings)`);
      if (!f.chartReadme.includes(`\`${name}\``)) problems.push(`${where} is not named in charts/troupe/README.md`);
      const rows = documented.filter((n) => n === name).length;
      if (rows !== 1) problems.push(`${where} has ${rows} rows in docs/configuration.md (one needed)`);
      if (row && !row.includes(`\`${name}\``)) problems.push(`${where} is not named in ${d.title}'s row of docs/providers.md`);
    }
  }
  // The script must take the secret list from the registry, not keep its own copy.
  if (!f.chartCheck.includes("providerSecretEnv")) problems.push("scripts/chart-check.sh does not read providerSecretEnv from providers/registry.ts");
  if (/secret_only="/.test(f.chartCheck)) problems.push("scripts/chart-check.sh hard-codes a secret_only list");
  return problems;
}

t.test("the chart and the docs agree with the registry", async (t) => {
  t.same(registryProblems(descriptors, files), []);
});

t.test("config reads exactly the registry's provider settings (plus its own)", async (t) => {
  for (const name of Object.keys(providerEnvShape)) t.ok(settingNames.includes(name), `${name} is a setting`);
  t.ok(providerSecretEnv.includes("OPENAI_API_KEY") && !providerSecretEnv.includes("OPENAI_BASE_URL"), "secrets are the descriptors' secretEnv");
});

const newcomer = defineProvider({
  name: "newcomer",
  title: "Newcomer",
  key: "newcomer",
  env: { NEWCOMER_API_KEY: optionalString, NEWCOMER_BASE_URL: z.url().default("https://api.newcomer.test") },
  secretEnv: ["NEWCOMER_API_KEY"],
  settings: (e) => ({ apiKey: e.NEWCOMER_API_KEY, baseUrl: e.NEWCOMER_BASE_URL }),
  create: () => [],
});

t.test("a provider registered without chart and docs entries fails the check", async (t) => {
  const problems = registryProblems([...descriptors, newcomer], files);
  t.match(problems.join("\n"), /docs\/providers\.md has no table row for Newcomer/);
  t.match(problems.join("\n"), /NEWCOMER_BASE_URL is missing from charts\/troupe\/values\.schema\.json/);
  t.match(problems.join("\n"), /NEWCOMER_API_KEY is not named in charts\/troupe\/README\.md/);
  t.match(problems.join("\n"), /NEWCOMER_API_KEY has 0 rows in docs\/configuration\.md/);
});

t.test("… and passes once they are added; a secret accepted as a plain value fails", async (t) => {
  const schema = JSON.parse(files.valuesSchema) as { properties: { config: { properties: Record<string, unknown> } } };
  schema.properties.config.properties.NEWCOMER_BASE_URL = { type: "string" };
  const added: Files = {
    valuesSchema: JSON.stringify(schema),
    chartReadme: `${files.chartReadme}\n\`NEWCOMER_API_KEY\` \`NEWCOMER_BASE_URL\``,
    chartCheck: files.chartCheck,
    configuration: `${files.configuration}\n| \`NEWCOMER_API_KEY\` | s | — | m |\n| \`NEWCOMER_BASE_URL\` | url | x | m |`,
    providers: `${files.providers}\n| Newcomer | \`NEWCOMER_API_KEY\`, \`NEWCOMER_BASE_URL\` | chat |`,
  };
  t.same(registryProblems([...descriptors, newcomer], added), []);
  schema.properties.config.properties.NEWCOMER_API_KEY = { type: "string" };
  t.match(registryProblems([...descriptors, newcomer], { ...added, valuesSchema: JSON.stringify(schema) }).join("\n"), /NEWCOMER_API_KEY is a secret/);
  t.match(registryProblems(descriptors, { ...files, chartCheck: `secret_only="OPENAI_API_KEY"\n` }).join("\n"), /providerSecretEnv/);
});

t.test("the registry refuses a name twice and a shared variable declared two ways", async (t) => {
  t.throws(() => buildEnvShape([newcomer, newcomer]), /newcomer is registered twice/);
  const other: AnyProviderDescriptor = { ...newcomer, name: "other", key: "other", secretEnv: [], env: { NEWCOMER_BASE_URL: z.url() } };
  t.throws(() => buildEnvShape([newcomer, other]), /NEWCOMER_BASE_URL is declared by two providers differently/);
  const badSecret: AnyProviderDescriptor = { ...newcomer, secretEnv: ["NOT_A_SETTING"] };
  t.throws(() => buildEnvShape([badSecret]), /secret NOT_A_SETTING/);
});

t.test("the catalogue refuses an entry of an unregistered provider", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), "troupe-catalogue-"));
  const file = join(dir, "catalogue.json");
  const entry = { id: "x-1", provider: "nobody", category: "text", tier: "small", capabilities: {}, pricing: { unit: "1M tokens" } };
  writeFileSync(file, JSON.stringify({ models: [entry] }));
  t.throws(() => Catalogue.load([], file), /provider nobody, which providers\/registry\.ts does not list/);
  writeFileSync(file, JSON.stringify({ models: [{ ...entry, provider: "openai" }] }));
  t.ok(Catalogue.load([], file).get("x-1"), "a registered provider's entry loads");
});
