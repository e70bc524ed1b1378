// A URL field, one rule for the server and the OpenAPI document: an absolute
// URI (a scheme, then no whitespace, and a URL parser takes it), stated as
// `format: uri`. Whether anything answers there, and whether the outbound
// policy lets Troupe fetch it, is checked when it is used (a 400 naming the
// field). Response fields use `uriOut`: documentation only.
import { z } from "zod";

const absolute = /^[A-Za-z][A-Za-z0-9+.-]*:\S*$/;

export function isAbsoluteUri(value: string): boolean {
  return absolute.test(value) && URL.canParse(value);
}

/** A request's URL field, `max` characters at most. */
export function uriString(max: number) {
  return z.string().min(1).max(max).refine(isAbsoluteUri, "not a valid URL: must be an absolute URL (such as https://example.com/a.png)").meta({ format: "uri" });
}

/** A URL Troupe answers with (a stored file, a webhook's address). */
export function uriOut(description?: string) {
  return z.string().meta(description ? { format: "uri", description } : { format: "uri" });
}
