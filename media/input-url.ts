// Media a caller names by URL: a transcription's audio_url, a video job's
// image_url (docs/api/media.md, "Input URLs"). A URL of this Troupe's own
// file route (PUBLIC_URL or the listen address) names a file already in the
// store, so it is read from there and never fetched: the listen address is
// usually loopback or private, which the outbound guard rightly refuses, and
// the guard stays exactly as strict for every other host. The file must be
// the caller's organization's; another organization's is 404 not_found,
// word for word what an unknown id gets (as DELETE /v1/files/{id} answers),
// so holding someone's URL neither lets another organization feed the file
// to a model nor tells it the file exists. It is held to the content types
// and size cap a download is. Any other URL is downloaded through the
// outbound guard, and a refused or failing one is a 400 naming the field.
import { TroupeError } from "../core/errors.ts";
import { isFileId } from "./file-store.ts";
import { isOutboundFetchError, type FetchedBody, type OutboundFailure } from "./outbound-fetch.ts";
import type { MediaDeps } from "./rehost.ts";

export interface InputUrlOptions {
  /** The caller's organization: the only one whose files a URL of ours may name. */
  organizationId: string;
  /** Content-type prefixes accepted, e.g. ["image/png"]. */
  accept: readonly string[];
  /** The body field that gave the URL, as messages and details name it (`audio_url`). */
  field: string;
  signal?: AbortSignal | undefined;
}

/** The bytes `url` names: from the file store when it is one of ours, else downloaded through the outbound guard. */
export async function fetchInputUrl(media: MediaDeps, url: string, opts: InputUrlOptions): Promise<FetchedBody> {
  const id = media.ownFileId(url);
  if (id !== undefined) return readOwnFile(media, id, url, opts);
  try {
    return await media.fetcher.fetch(url, { accept: opts.accept, ...(opts.signal ? { signal: opts.signal } : {}) });
  } catch (e) {
    if (!isOutboundFetchError(e)) throw e;
    throw unusable(opts.field, e.message, e.reason);
  }
}

function unusable(field: string, message: string, reason: OutboundFailure): TroupeError {
  return new TroupeError("invalid_request", `${field} cannot be used: ${message}`, { details: [{ path: `body.${field}`, message, reason }] });
}

async function readOwnFile(media: MediaDeps, id: string, url: string, opts: InputUrlOptions): Promise<FetchedBody> {
  const notFound = (): TroupeError =>
    new TroupeError("not_found", `${opts.field}: no file ${id}`, { details: [{ path: `body.${opts.field}`, message: `no file ${id}` }] });
  const file = isFileId(id) ? await media.files.head(id) : undefined;
  if (!file || file.organization_id !== opts.organizationId) throw notFound();
  const contentType = file.content_type.split(";")[0]!.trim().toLowerCase();
  if (!opts.accept.some((prefix) => contentType.startsWith(prefix))) {
    throw unusable(opts.field, `the URL's content type ${contentType} is not one of ${opts.accept.join(", ")}`, "content_type");
  }
  const maxBytes = media.fetcher.maxBytes;
  if (file.size > maxBytes) throw unusable(opts.field, `the URL's body (${file.size} bytes) exceeds the limit of ${maxBytes} bytes`, "too_large");
  const got = await media.files.get(id);
  // Deleted since the head: gone, as for any other unknown id.
  if (!got) throw notFound();
  const chunks: Buffer[] = [];
  for await (const chunk of got.body) {
    opts.signal?.throwIfAborted();
    chunks.push(chunk);
  }
  return { body: Buffer.concat(chunks), contentType, url };
}
