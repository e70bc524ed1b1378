// Server-Sent Events read from a response body: yields each event's `data`
// (data lines joined with "\n"), as the text/event-stream format defines;
// comments, `event:`, `id:` and `retry:` fields are not needed by Troupe's streams.
export async function* readSseData(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  const reader = body.getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // Events end with a blank line; CRLF, LF and CR line ends are all allowed.
      const events = buffer.split(/\r\n\r\n|\n\n|\r\r/);
      buffer = done ? "" : (events.pop() ?? "");
      for (const event of events) {
        const data = event
          .split(/\r\n|\n|\r/)
          .filter((line) => line.startsWith("data:"))
          .map((line) => line.slice(line.startsWith("data: ") ? 6 : 5));
        if (data.length > 0) yield data.join("\n");
      }
      if (done) return;
    }
  } finally {
    // Stops the download when the caller leaves the loop early.
    await reader.cancel().catch(() => undefined);
  }
}
