// A deterministic instance of a JSON Schema, for the simulated model's
// structured output (response_format json_schema) and tool arguments
// (docs/simulated-provider.md, "Structured output"). Small and bounded on
// purpose: the schemas are callers' (zod's and pydantic's emitters, OpenAI
// strict mode), so it covers what they emit and stops at a depth, a node
// count and an array length, answering the smallest valid value it can
// past them. Variation comes from `seed` and each value's path through the
// hash (same schema and seed, same instance).
//
// Supported: type (one or a list, "null" for nullable), nullable (OpenAPI),
// const, enum, properties / required / additionalProperties / minProperties,
// items / prefixItems / minItems / maxItems / uniqueItems, minLength /
// maxLength, format (date-time, date, time, email, uri, uuid, hostname,
// ipv4, ipv6, duration), pattern (a literal/class/quantifier/group subset,
// checked against the RegExp; else a fallback that may not match), minimum /
// maximum / exclusive bounds (number or draft-4 boolean form) / multipleOf,
// anyOf / oneOf (a branch by hash), allOf (object branches merged), $ref to
// "#" or a JSON pointer inside the schema ($defs, definitions). Ignored:
// not, if/then/else, dependentRequired/dependentSchemas, patternProperties,
// contains, propertyNames, unevaluated*, remote $refs.
import { fnv1a } from "./hash.ts";

type Schema = Record<string, unknown> | boolean;

export interface InstanceOptions {
  /** Include optional properties (some, by hash) — structured output does; tool arguments keep to the required ones. */
  optional?: boolean;
}

/** Past this depth: required properties only, the fewest items, the first non-recursive branch. */
const softDepth = 6;
/** The most nodes one instance has; past it, the same minimal forms. */
const maxNodes = 2_000;
/** An array never gets more items than this unless minItems asks (and then at most hardMaxItems). */
const defaultMaxItems = 3;
const hardMaxItems = 100;
const hardMaxString = 10_000;
/** $refs followed in one path: a schema that only recurses ends here in null. */
const maxRefDepth = 32;

const words = ["alpha", "bravo", "cedar", "delta", "ember", "fjord", "gale", "harbor", "iris", "juniper", "kite", "lumen", "maple", "north", "opal", "pine"];

class Generator {
  private nodes = 0;
  private readonly root: Schema;
  private readonly seed: number;
  private readonly optional: boolean;

  constructor(root: Schema, seed: string, options: InstanceOptions) {
    this.root = root;
    this.seed = fnv1a(seed);
    this.optional = options.optional ?? true;
  }

  private hash(path: string): number {
    return fnv1a(path, this.seed);
  }

  private minimal(depth: number): boolean {
    return depth >= softDepth || this.nodes >= maxNodes;
  }

  value(schema: Schema, path: string, depth: number, refs: number): unknown {
    this.nodes++;
    if (schema === true) return `${words[this.hash(path) % words.length]}`;
    if (schema === false || typeof schema !== "object" || schema === null) return null;
    const s = schema;
    if (typeof s["$ref"] === "string") {
      const target = refs < maxRefDepth ? this.resolve(s["$ref"]) : undefined;
      if (target === undefined) return null;
      // Siblings of $ref (draft 2019+) narrow it: merged over the target.
      const { $ref: _ref, ...siblings } = s;
      const merged = Object.keys(siblings).length > 0 && typeof target === "object" ? { ...target, ...siblings } : target;
      return this.value(merged, path, depth, refs + 1);
    }
    if ("const" in s) return s["const"];
    if (Array.isArray(s["enum"]) && s["enum"].length > 0) return s["enum"][this.hash(path) % s["enum"].length];
    const branches = (Array.isArray(s["anyOf"]) ? s["anyOf"] : Array.isArray(s["oneOf"]) ? s["oneOf"] : undefined) as Schema[] | undefined;
    if (branches && branches.length > 0) {
      const { anyOf: _a, oneOf: _o, ...rest } = s;
      const branch = this.pickBranch(branches, path, depth);
      const merged = typeof branch === "object" && Object.keys(rest).length > 0 ? { ...rest, ...branch } : branch;
      return this.value(merged, path, depth, refs);
    }
    if (Array.isArray(s["allOf"]) && s["allOf"].length > 0) {
      const { allOf, ...rest } = s;
      return this.value(mergeAll(rest, allOf as Schema[], (ref) => this.resolve(ref)), path, depth, refs);
    }
    switch (this.typeOf(s, path)) {
      case "null":
        return null;
      case "boolean":
        return this.hash(path) % 2 === 0;
      case "integer":
        return this.number(s, path, true);
      case "number":
        return this.number(s, path, false);
      case "string":
        return this.string(s, path);
      case "array":
        return this.array(s, path, depth, refs);
      default:
        return this.object(s, path, depth, refs);
    }
  }

  private resolve(ref: string): Schema | undefined {
    if (ref === "#") return this.root;
    if (!ref.startsWith("#/")) return undefined;
    let at: unknown = this.root;
    for (const raw of ref.slice(2).split("/")) {
      const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
      if (!at || typeof at !== "object") return undefined;
      at = (at as Record<string, unknown>)[key];
    }
    return typeof at === "boolean" || (at && typeof at === "object") ? (at as Schema) : undefined;
  }

  /** By hash; when minimal, a branch that does not recurse (a null, a scalar) if there is one. */
  private pickBranch(branches: Schema[], path: string, depth: number): Schema {
    if (this.minimal(depth)) {
      const flat = branches.find((b) => typeof b === "object" && b !== null && b["$ref"] === undefined && !("properties" in b) && !("items" in b));
      if (flat !== undefined) return flat;
    }
    return branches[this.hash(`${path}|branch`) % branches.length]!;
  }

  private typeOf(s: Record<string, unknown>, path: string): string {
    const t = s["type"];
    if (typeof t === "string") return t;
    if (Array.isArray(t) && t.length > 0) {
      // Nullable ([T, "null"]): the non-null type, the answer that says more.
      const real = t.filter((x) => x !== "null");
      return String(real.length > 0 ? real[this.hash(`${path}|type`) % real.length] : "null");
    }
    if ("properties" in s || "required" in s || "additionalProperties" in s) return "object";
    if ("items" in s || "prefixItems" in s) return "array";
    if ("minimum" in s || "maximum" in s || "multipleOf" in s) return "number";
    return "string";
  }

  private number(s: Record<string, unknown>, path: string, integer: boolean): number {
    let low = typeof s["minimum"] === "number" ? s["minimum"] : -Infinity;
    let high = typeof s["maximum"] === "number" ? s["maximum"] : Infinity;
    let lowOpen = false;
    let highOpen = false;
    if (typeof s["exclusiveMinimum"] === "number") {
      if (s["exclusiveMinimum"] >= low) [low, lowOpen] = [s["exclusiveMinimum"], true];
    } else if (s["exclusiveMinimum"] === true) lowOpen = true;
    if (typeof s["exclusiveMaximum"] === "number") {
      if (s["exclusiveMaximum"] <= high) [high, highOpen] = [s["exclusiveMaximum"], true];
    } else if (s["exclusiveMaximum"] === true) highOpen = true;
    const step = typeof s["multipleOf"] === "number" && s["multipleOf"] > 0 ? s["multipleOf"] : integer ? 1 : 0;
    const h = this.hash(path);
    if (step > 0) {
      // The multiples of step inside the bounds: lowest k and highest k.
      // An integer that must be a multiple of a fraction: whole multiples of it only.
      const unit = integer && step % 1 !== 0 ? Math.ceil(step) * Math.round(1 / (step % 1) || 1) : step;
      let kLow = Number.isFinite(low) ? Math.ceil(low / unit) : Number.NaN;
      let kHigh = Number.isFinite(high) ? Math.floor(high / unit) : Number.NaN;
      if (Number.isNaN(kLow)) kLow = Number.isNaN(kHigh) ? 0 : kHigh - 100;
      if (Number.isNaN(kHigh)) kHigh = kLow + 100;
      if (lowOpen && kLow * unit <= low) kLow++;
      if (highOpen && kHigh * unit >= high) kHigh--;
      const span = Math.max(0, Math.min(kHigh - kLow, 1000));
      return Number(((kLow + (h % (span + 1))) * unit).toPrecision(12));
    }
    // A real number strictly inside the bounds.
    const a = Number.isFinite(low) ? low : Number.isFinite(high) ? high - 100 : 0;
    const b = Number.isFinite(high) ? high : a + 100;
    if (b <= a) return a;
    const fraction = ((h % 997) + 1) / 998;
    return Number((a + (b - a) * fraction).toPrecision(12));
  }

  private string(s: Record<string, unknown>, path: string): string {
    const h = this.hash(path);
    const min = typeof s["minLength"] === "number" ? Math.min(s["minLength"], hardMaxString) : 0;
    const max = typeof s["maxLength"] === "number" ? s["maxLength"] : Infinity;
    const format = typeof s["format"] === "string" ? formatted(s["format"], h) : undefined;
    if (format !== undefined) return format;
    if (typeof s["pattern"] === "string") {
      const matched = fromPattern(s["pattern"], h, min, max);
      if (matched !== undefined) return matched;
    }
    let text = `${words[h % words.length]} ${words[(h >>> 4) % words.length]}`;
    while (text.length < min) text += ` ${words[(text.length + h) % words.length]}`;
    return text.length > max ? text.slice(0, Math.max(min, max)) : text;
  }

  private array(s: Record<string, unknown>, path: string, depth: number, refs: number): unknown[] {
    const h = this.hash(path);
    const prefix = Array.isArray(s["prefixItems"]) ? (s["prefixItems"] as Schema[]) : Array.isArray(s["items"]) ? (s["items"] as Schema[]) : [];
    const items: Schema | undefined = !Array.isArray(s["items"]) && (typeof s["items"] === "object" || typeof s["items"] === "boolean") ? (s["items"] as Schema) : undefined;
    const min = Math.min(typeof s["minItems"] === "number" ? s["minItems"] : 0, hardMaxItems);
    const max = Math.min(typeof s["maxItems"] === "number" ? s["maxItems"] : Infinity, hardMaxItems);
    const wanted = this.minimal(depth) ? min : Math.max(min, Math.min(max, 1 + (h % defaultMaxItems)));
    // Items past the tuple need an item schema (none or false: the tuple only).
    const count = items === undefined || items === false ? Math.min(wanted, prefix.length) : Math.max(wanted, 0);
    const out: unknown[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < count; i++) {
      const schema = i < prefix.length ? prefix[i]! : items!;
      let value = this.value(schema, `${path}/${i}`, depth + 1, refs);
      if (s["uniqueItems"] === true) {
        // A few tries at a value not yet in the array (an enum of two cannot fill three).
        for (let attempt = 1; seen.has(JSON.stringify(value)) && attempt < 8; attempt++) value = this.value(schema, `${path}/${i}~${attempt}`, depth + 1, refs);
        if (seen.has(JSON.stringify(value))) break;
        seen.add(JSON.stringify(value));
      }
      out.push(value);
    }
    return out;
  }

  private object(s: Record<string, unknown>, path: string, depth: number, refs: number): Record<string, unknown> {
    const props = s["properties"] && typeof s["properties"] === "object" ? (s["properties"] as Record<string, Schema>) : {};
    const required = new Set(Array.isArray(s["required"]) ? s["required"].filter((r): r is string => typeof r === "string") : []);
    const minProps = typeof s["minProperties"] === "number" ? s["minProperties"] : 0;
    const out: Record<string, unknown> = {};
    const minimal = this.minimal(depth);
    const names = Object.keys(props);
    for (const name of names) {
      const include = required.has(name) || (this.optional && !minimal && this.hash(`${path}/${name}|opt`) % 3 !== 0);
      if (include) out[name] = this.value(props[name]!, `${path}/${name}`, depth + 1, refs);
    }
    // Required names without a property schema, then minProperties: from the declared ones first.
    for (const name of required) if (!(name in out)) out[name] = this.extra(s, `${path}/${name}`, depth, refs);
    for (const name of names) if (Object.keys(out).length < minProps && !(name in out)) out[name] = this.value(props[name]!, `${path}/${name}`, depth + 1, refs);
    for (let i = 0; Object.keys(out).length < minProps && s["additionalProperties"] !== false && i < hardMaxItems; i++) out[`key_${i}`] = this.extra(s, `${path}/key_${i}`, depth, refs);
    return out;
  }

  private extra(s: Record<string, unknown>, path: string, depth: number, refs: number): unknown {
    const additional = s["additionalProperties"];
    return typeof additional === "object" && additional !== null ? this.value(additional as Schema, path, depth + 1, refs) : this.value(true, path, depth + 1, refs);
  }
}

/** allOf: object branches' properties and required lists merged into the parent; other keywords, the first one's. */
function mergeAll(base: Record<string, unknown>, branches: Schema[], resolve: (ref: string) => Schema | undefined): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...base };
  const props: Record<string, unknown> = { ...((base["properties"] as Record<string, unknown> | undefined) ?? {}) };
  const required = new Set<string>(Array.isArray(base["required"]) ? (base["required"] as string[]) : []);
  for (const raw of branches) {
    const branch = typeof raw === "object" && typeof raw["$ref"] === "string" ? resolve(raw["$ref"]) : raw;
    if (typeof branch !== "object" || branch === null) continue;
    Object.assign(props, (branch["properties"] as Record<string, unknown> | undefined) ?? {});
    for (const r of Array.isArray(branch["required"]) ? (branch["required"] as string[]) : []) required.add(r);
    for (const [k, v] of Object.entries(branch)) if (k !== "properties" && k !== "required" && !(k in merged)) merged[k] = v;
  }
  if (Object.keys(props).length > 0) merged["properties"] = props;
  if (required.size > 0) merged["required"] = [...required];
  return merged;
}

function formatted(format: string, h: number): string | undefined {
  const day = 1 + (h % 28);
  const pad = (n: number) => String(n).padStart(2, "0");
  const hex = (n: number, len: number) => (n >>> 0).toString(16).padStart(8, "0").slice(0, len);
  switch (format) {
    case "date-time":
      return `2026-01-${pad(day)}T${pad(h % 24)}:${pad(h % 60)}:00Z`;
    case "date":
      return `2026-01-${pad(day)}`;
    case "time":
      return `${pad(h % 24)}:${pad(h % 60)}:00Z`;
    case "email":
      return `${words[h % words.length]}@example.com`;
    case "uri":
    case "url":
    case "uri-reference":
    case "iri":
      return `https://example.com/${words[h % words.length]}`;
    case "uuid":
      return `${hex(h, 8)}-${hex(h >>> 3, 4)}-4${hex(h >>> 5, 3)}-8${hex(h >>> 7, 3)}-${hex(h, 8)}${hex(h >>> 9, 4)}`;
    case "hostname":
      return `${words[h % words.length]}.example.com`;
    case "ipv4":
      return `192.0.2.${h % 256}`;
    case "ipv6":
      return `2001:db8::${(h % 65536).toString(16)}`;
    case "duration":
      return `PT${1 + (h % 59)}M`;
    default:
      return undefined;
  }
}

/**
 * A string matching a simple regular expression: literals, escapes (\d \w
 * \s and escaped punctuation), classes ([a-z0-9_], negated ones skipped),
 * `.`, groups with `|`, and the quantifiers ? * + {n} {n,} {n,m}. Checked
 * against the RegExp (searching, as JSON Schema's pattern does); undefined
 * when the pattern is beyond this subset or the sample misses.
 */
export function fromPattern(pattern: string, h: number, minLength = 0, maxLength = Infinity): string | undefined {
  let re: RegExp;
  try {
    re = new RegExp(pattern, "u");
  } catch {
    return undefined;
  }
  for (let attempt = 0; attempt < 4; attempt++) {
    let sample: string | undefined;
    try {
      sample = new PatternSampler(pattern, fnv1a(String(attempt), h)).sample();
    } catch {
      return undefined;
    }
    if (sample !== undefined && re.test(sample) && sample.length >= minLength && sample.length <= maxLength) return sample;
  }
  return undefined;
}

class PatternSampler {
  private i = 0;
  private h: number;
  private readonly p: string;

  constructor(pattern: string, h: number) {
    this.p = pattern;
    this.h = h;
  }

  private next(n: number): number {
    this.h = fnv1a(String(this.i), this.h);
    return n <= 1 ? 0 : this.h % n;
  }

  sample(): string {
    const out = this.alternatives();
    if (this.i < this.p.length) throw new Error("pattern beyond the sampler");
    return out;
  }

  private alternatives(): string {
    const options: string[] = [this.sequence()];
    while (this.p[this.i] === "|") {
      this.i++;
      options.push(this.sequence());
    }
    return options[this.next(options.length)]!;
  }

  private sequence(): string {
    let out = "";
    while (this.i < this.p.length && this.p[this.i] !== "|" && this.p[this.i] !== ")") {
      const ch = this.p[this.i]!;
      if (ch === "^" || ch === "$") {
        this.i++;
        continue;
      }
      const atom = this.atom();
      const [min, max] = this.quantifier();
      const times = min + this.next(Math.min(max, min + 3) - min + 1);
      for (let k = 0; k < times; k++) out += k === 0 ? atom.first : atom.again();
    }
    return out;
  }

  private atom(): { first: string; again: () => string } {
    const start = this.i;
    const ch = this.p[this.i++]!;
    if (ch === "(") {
      if (this.p.startsWith("?:", this.i)) this.i += 2;
      else if (this.p[this.i] === "?") throw new Error("lookaround");
      const groupStart = this.i;
      const first = this.alternatives();
      if (this.p[this.i++] !== ")") throw new Error("unclosed group");
      return {
        first,
        again: () => {
          const saved = this.i;
          this.i = groupStart;
          const value = this.alternatives();
          this.i = saved;
          return value;
        },
      };
    }
    let pick: () => string;
    if (ch === "[") pick = this.charClass();
    else if (ch === "\\") pick = this.escape();
    else if (ch === ".") pick = () => String.fromCharCode(97 + this.next(26));
    else if ("*+?{".includes(ch)) throw new Error(`quantifier at ${start}`);
    else pick = () => ch;
    return { first: pick(), again: pick };
  }

  private escape(): () => string {
    const e = this.p[this.i++];
    if (e === undefined) throw new Error("trailing backslash");
    if (e === "d") return () => String(this.next(10));
    if (e === "w") return () => "abcdefghijklmnopqrstuvwxyz0123456789_"[this.next(37)]!;
    if (e === "s") return () => " ";
    if (/[A-Za-z0-9]/.test(e)) throw new Error(`escape \\${e}`);
    return () => e;
  }

  private charClass(): () => string {
    if (this.p[this.i] === "^") throw new Error("negated class");
    const chars: string[] = [];
    while (this.i < this.p.length && this.p[this.i] !== "]") {
      const c = this.p[this.i++]!;
      if (c === "\\") {
        const e = this.p[this.i++]!;
        if (e === "d") chars.push(..."0123456789");
        else if (e === "w") chars.push(..."abcdefghijklmnopqrstuvwxyz0123456789_");
        else if (e === "s") chars.push(" ");
        else chars.push(e);
        continue;
      }
      if (this.p[this.i] === "-" && this.p[this.i + 1] !== undefined && this.p[this.i + 1] !== "]") {
        const end = this.p[this.i + 1]!;
        this.i += 2;
        for (let code = c.charCodeAt(0); code <= end.charCodeAt(0) && chars.length < 512; code++) chars.push(String.fromCharCode(code));
        continue;
      }
      chars.push(c);
    }
    if (this.p[this.i++] !== "]" || chars.length === 0) throw new Error("bad class");
    return () => chars[this.next(chars.length)]!;
  }

  private quantifier(): [number, number] {
    const q = this.p[this.i];
    let range: [number, number] = [1, 1];
    if (q === "?") range = [0, 1];
    else if (q === "*") range = [0, 4];
    else if (q === "+") range = [1, 4];
    else if (q === "{") {
      const m = /^\{(\d+)(,(\d*))?\}/.exec(this.p.slice(this.i));
      if (!m) throw new Error("bad quantifier");
      const min = Number(m[1]);
      const max = m[2] === undefined ? min : m[3] === "" ? min + 4 : Number(m[3]);
      if (min > 1000 || max < min) throw new Error("quantifier too large");
      this.i += m[0].length;
      if (this.p[this.i] === "?") this.i++;
      return [min, max];
    } else return range;
    this.i++;
    if (this.p[this.i] === "?") this.i++; // lazy: the same strings
    return range;
  }
}

/** The instance: the same schema, seed and options always give the same value. */
export function jsonInstance(schema: unknown, seed: string, options: InstanceOptions = {}): unknown {
  const root: Schema = typeof schema === "boolean" ? schema : schema && typeof schema === "object" ? (schema as Record<string, unknown>) : true;
  return new Generator(root, seed, options).value(root, "#", 0, 0);
}
