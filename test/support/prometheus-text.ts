// Reads Prometheus text exposition (what GET /metrics answers) into samples,
// so tests assert on series by name and labels.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const line = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/;
const label = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;

export function parsePrometheus(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const raw of text.split("\n")) {
    if (raw === "" || raw.startsWith("#")) continue;
    const m = line.exec(raw);
    if (!m) throw new Error(`not a Prometheus sample line: ${raw}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(label)) labels[l[1]!] = l[2]!.replace(/\\"/g, '"').replace(/\\\\/g, "\\");
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** The sum of the samples named `name` whose labels include `where`. */
export function sampleValue(samples: readonly Sample[], name: string, where: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v))
    .reduce((sum, s) => sum + s.value, 0);
}

/** Whether any sample of that name (and labels) exists at all. */
export function hasSample(samples: readonly Sample[], name: string, where: Record<string, string> = {}): boolean {
  return samples.some((s) => s.name === name && Object.entries(where).every(([k, v]) => s.labels[k] === v));
}

/** The # HELP lines: which families are defined, with or without samples yet. */
export function families(text: string): Set<string> {
  return new Set([...text.matchAll(/^# HELP (\S+)/gm)].map((m) => m[1]!));
}
