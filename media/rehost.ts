// Re-hosting (docs/api/media.md): every provider result — bytes, base64 or
// a temporary URL — is copied into the file store before the response is
// sent, so callers only ever see /v1/files/{id} URLs. Downloads of provider
// URLs go through the outbound guard. A failed copy fails the request with
// 502 and deletes what the request had already stored: nothing dangling,
// nothing half-stored.
import { TroupeError } from "../core/errors.ts";
import type { FileScope, FileStore, StoredFile } from "./file-store.ts";
import type { Capabilities } from "./media-tools.ts";
import { isOutboundFetchError, type OutboundFetcher, type OutboundFetchError } from "./outbound-fetch.ts";

export type ProviderPayload = { kind: "bytes"; bytes: Buffer; contentType: string } | { kind: "url"; url: string };

export interface MediaDeps {
  files: FileStore;
  fetcher: OutboundFetcher;
  /** The public URL of a stored file (PUBLIC_URL, else the listen address). */
  fileUrl(id: string): string;
  /** The id segment of a URL of this Troupe's own file route (PUBLIC_URL or the listen address), else undefined. */
  ownFileId(url: string): string | undefined;
  /** Which media tools (ffmpeg, ffprobe) are installed, and what cannot run without them. */
  capabilities: Capabilities;
}

export interface RehostOptions {
  organizationId: string;
  /** The environment of the key the result is for: the file is that environment's. */
  environmentId: string;
  /** The scope of the call the result is for. */
  scope: FileScope;
  provider: string;
  /** Content-type prefixes a downloaded result must have. */
  accept: readonly string[];
  /** Checks the bytes (e.g. an image's format and size); a message when they are wrong. */
  check?: (bytes: Buffer, contentType: string) => string | undefined;
  /** The content type to store, from the bytes; default: the one the payload or download gave. */
  contentTypeOf?: (bytes: Buffer) => string;
}

/** Copies every payload into the store; all or nothing. */
export async function rehostAll(deps: MediaDeps, payloads: readonly ProviderPayload[], opts: RehostOptions): Promise<StoredFile[]> {
  const results = await Promise.allSettled(payloads.map((p) => rehostOne(deps, p, opts)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
  if (!failed) return results.map((r) => (r as PromiseFulfilledResult<StoredFile>).value);
  await Promise.all(
    results.map((r) => (r.status === "fulfilled" ? deps.files.delete(r.value.id).catch(() => false) : Promise.resolve(false))),
  );
  throw failed.reason;
}

function reasonText(e: OutboundFetchError): string {
  switch (e.reason) {
    case "refused":
      return "its URL was refused by the outbound guard";
    case "unreachable":
      return "its URL could not be reached";
    case "status":
      return `its URL answered HTTP ${e.status ?? "error"}`;
    case "too_large":
      return "it exceeds the download size limit";
    case "timeout":
      return "the download did not finish in time";
    case "content_type":
      return "it has an unexpected content type";
  }
}

async function rehostOne(deps: MediaDeps, payload: ProviderPayload, opts: RehostOptions): Promise<StoredFile> {
  let bytes: Buffer;
  let contentType: string;
  if (payload.kind === "bytes") {
    bytes = payload.bytes;
    contentType = payload.contentType;
  } else {
    try {
      const got = await deps.fetcher.fetch(payload.url, { accept: opts.accept });
      bytes = got.body;
      contentType = got.contentType;
    } catch (e) {
      // Neither the provider's URL nor its host appears in the message: callers never see them.
      const why = isOutboundFetchError(e) ? reasonText(e) : "the download failed";
      throw new TroupeError("provider_error", `could not copy the ${opts.provider} result: ${why}`, {
        details: { provider: opts.provider, reason: isOutboundFetchError(e) ? e.reason : "unknown" },
        cause: e,
      });
    }
  }
  const problem = opts.check?.(bytes, contentType);
  if (problem) throw new TroupeError("provider_error", `${opts.provider} returned an unusable result: ${problem}`, { details: { provider: opts.provider } });
  return deps.files.put({ body: bytes, contentType: opts.contentTypeOf?.(bytes) ?? contentType, organizationId: opts.organizationId, environmentId: opts.environmentId, scope: opts.scope });
}
