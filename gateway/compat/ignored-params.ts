// The one way every compatible mount says which request fields it accepted
// but did not send on (docs/guides/compat-fields.md): fields that change
// only how a provider works (`store`, `metadata`, `service_tier`, `user`…),
// never what the answer is. A client that cares reads the header; one that
// does not is not refused for sending what its official API accepts.

/** The response header naming the accepted-but-not-sent fields, comma-separated, in the body's order. */
export const ignoredParamsHeader = "troupe-ignored-params";

/**
 * The names among `ignorable` that `body` sets (present and not null), in
 * `ignorable`'s order. A field set to null is the same as one left out, as
 * the official APIs treat it.
 */
export function ignoredParams(body: Readonly<Record<string, unknown>>, ignorable: readonly string[]): string[] {
  return ignorable.filter((name) => body[name] !== undefined && body[name] !== null);
}

/** The header for `json(status, body, headers)`, or undefined when nothing was ignored. */
export function ignoredParamsHeaders(names: readonly string[]): Record<string, string> | undefined {
  return names.length > 0 ? { [ignoredParamsHeader]: names.join(", ") } : undefined;
}

/** The same for `ctx.sse(headers)`. */
export function ignoredParamsSseHeaders(names: readonly string[]): [string, string][] {
  return names.length > 0 ? [[ignoredParamsHeader, names.join(", ")]] : [];
}
