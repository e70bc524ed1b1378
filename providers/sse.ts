// Incremental Server-Sent Events parser for upstream streams: yields each
// event as soon as its blank-line terminator arrives, never buffering the
// whole body. Handles \n, \r\n and \r line ends, comments, multi-line data.
import { ProviderCallError } from "./errors.ts";
import { wrapTransportError } from "./upstream-request.ts";

export interface SseEvent {
  event: string | undefined;
  data: string;
}

export async function* parseSse(
  provider: string,
  body: AsyncIterable<Uint8Array | string>,
  signal: AbortSignal,
): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event: string | undefined;
  let data: string[] = [];
  // A \r that ended the previous chunk may be the first half of \r\n: its \n must not count as another line end.
  let skipLf = false;
  try {
    for await (const chunk of body) {
      buffer += typeof chunk === "string" ? chunk : decoder.decode(chunk, { stream: true });
      if (skipLf && buffer.length > 0) {
        if (buffer.charCodeAt(0) === 10) buffer = buffer.slice(1);
        skipLf = false;
      }
      let nl: number;
      while ((nl = buffer.search(/\r\n|\r|\n/)) !== -1) {
        const line = buffer.slice(0, nl);
        let sepLen = 1;
        if (buffer[nl] === "\r") {
          // The line ends here either way; waiting for the next chunk would delay a \r-terminated event.
          if (nl + 1 === buffer.length) skipLf = true;
          else if (buffer[nl + 1] === "\n") sepLen = 2;
        }
        buffer = buffer.slice(nl + sepLen);
        if (line === "") {
          if (data.length > 0) yield { event, data: data.join("\n") };
          event = undefined;
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon === -1 ? line : line.slice(0, colon);
        let value = colon === -1 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "event") event = value;
      }
    }
  } catch (e) {
    throw wrapTransportError(provider, e, signal);
  }
  if (data.length > 0) yield { event, data: data.join("\n") };
}

export function parseSseJson(provider: string, data: string): unknown {
  try {
    return JSON.parse(data);
  } catch (e) {
    throw new ProviderCallError(provider, "protocol", `${provider} sent an invalid stream event`, { cause: e });
  }
}

/** A stream that ended without its terminal event was cut. */
export function cutStream(provider: string): ProviderCallError {
  return new ProviderCallError(provider, "connection", `${provider} stream ended before it finished`);
}
