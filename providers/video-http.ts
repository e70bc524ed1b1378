// What the Runway and Luma adapters share: a task read whose 404 means the
// provider no longer knows the task (`lost`: the JobActor may resubmit), a
// DELETE that treats "already gone" as done, and an image as a data URI.
import { int } from "../core/env.ts";
import { isProviderCallError } from "./errors.ts";
import { send, sendForJson, type UpstreamClient } from "./upstream-request.ts";
import type { VideoImage } from "./video.ts";

/**
 * One setting both video providers read: the registry accepts a variable
 * declared by two descriptors only when it is this same schema object.
 */
export const videoPollIntervalEnv = {
  /** Video tasks (Runway, Luma): how long after a submit or an unfinished poll the next poll is due. */
  VIDEO_POLL_INTERVAL_MS: int(10, 600_000).default(5_000),
};

/** GET a task's JSON; undefined when the provider answers 404 (task expired or unknown there). */
export async function readTask(provider: string, client: UpstreamClient, url: string, headers: Record<string, string>, signal: AbortSignal): Promise<unknown> {
  try {
    return await sendForJson(provider, client, url, { method: "GET", headers, signal });
  } catch (e) {
    if (isProviderCallError(e) && e.kind === "http" && e.status === 404) return undefined;
    throw e;
  }
}

/** DELETE a task; a 404 means there is nothing left to cancel. */
export async function deleteTask(provider: string, client: UpstreamClient, url: string, headers: Record<string, string>, signal: AbortSignal): Promise<void> {
  try {
    const body = await send(provider, client, url, { method: "DELETE", headers, signal });
    // Read the (empty) body to the end so the keep-alive connection is reusable.
    for await (const _chunk of body);
  } catch (e) {
    if (isProviderCallError(e) && e.kind === "http" && e.status === 404) return;
    throw e;
  }
}

export function dataUri(image: VideoImage): string {
  return `data:${image.content_type};base64,${Buffer.from(image.bytes).toString("base64")}`;
}
