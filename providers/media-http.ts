// Helpers the media adapters share: multipart/form-data bodies (transcription
// uploads, Stability), reading a binary answer under a cap, and size parsing.
import { randomBytes } from "node:crypto";
import { ProviderCallError } from "./errors.ts";

export interface MultipartFile {
  name: string;
  filename: string;
  contentType: string;
  bytes: Buffer;
}

/** A multipart/form-data body (RFC 7578) and its content type. */
export function multipart(fields: Record<string, string | undefined>, files: MultipartFile[] = []): { body: Buffer; contentType: string } {
  const boundary = `troupe-${randomBytes(12).toString("hex")}`;
  const parts: Buffer[] = [];
  for (const [name, value] of Object.entries(fields)) {
    if (value === undefined) continue;
    parts.push(Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`));
  }
  for (const f of files) {
    parts.push(
      Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${f.name}"; filename="${f.filename.replace(/"/g, "")}"\r\ncontent-type: ${f.contentType}\r\n\r\n`),
      f.bytes,
      Buffer.from("\r\n"),
    );
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

/** Collects a binary answer; more than maxBytes is a protocol failure (a provider never sends that much). */
export async function readBytes(provider: string, body: AsyncIterable<Buffer>, maxBytes: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new ProviderCallError(provider, "protocol", `${provider} sent more than ${maxBytes} bytes`);
    chunks.push(chunk);
  }
  if (size === 0) throw new ProviderCallError(provider, "protocol", `${provider} sent an empty body`);
  return Buffer.concat(chunks, size);
}

/** 64 MiB: well above any single generated image or speech clip. */
export const maxProviderBytes = 64 * 1024 * 1024;

/** A file name for an upload, from the audio's content type. */
export function audioFilename(contentType: string): string {
  const ext: Record<string, string> = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
    "audio/mp4": "m4a",
    "audio/x-m4a": "m4a",
    "audio/ogg": "ogg",
    "audio/webm": "webm",
    "audio/flac": "flac",
    "video/mp4": "mp4",
    "video/webm": "webm",
  };
  return `audio.${ext[contentType] ?? "bin"}`;
}
