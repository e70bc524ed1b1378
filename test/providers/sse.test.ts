// The upstream SSE parser (providers/sse.ts) against a recorded Anthropic
// stream cut at every byte (multi-byte UTF-8 characters included), fed one
// byte at a time, and rewritten with \r\n and \r line ends; plus comments,
// multi-line data, an unterminated last event and transport failures.
import t from "tap";
import { isProviderCallError } from "../../providers/errors.ts";
import { parseSse, type SseEvent } from "../../providers/sse.ts";

// Shape of a real /v1/messages stream (ids shortened); "ü" and "✓" are 2 and 3 bytes in UTF-8.
const recorded = [
  "event: message_start",
  'data: {"type":"message_start","message":{"id":"msg_01","model":"claude-3-5-haiku","usage":{"input_tokens":12,"output_tokens":1}}}',
  "",
  ": keep-alive comment, ignored",
  "event: ping",
  'data: {"type": "ping"}',
  "",
  "event: content_block_delta",
  'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße ✓"}}',
  "",
  "data: first line",
  "data:second line, no space after the colon",
  "data: ",
  "",
  "event: message_stop",
  'data: {"type":"message_stop"}',
  "",
  "",
].join("\n");

const expected: SseEvent[] = [
  { event: "message_start", data: '{"type":"message_start","message":{"id":"msg_01","model":"claude-3-5-haiku","usage":{"input_tokens":12,"output_tokens":1}}}' },
  { event: "ping", data: '{"type": "ping"}' },
  { event: "content_block_delta", data: '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Grüße ✓"}}' },
  { event: undefined, data: "first line\nsecond line, no space after the colon\n" },
  { event: "message_stop", data: '{"type":"message_stop"}' },
];

async function* chunks(parts: Uint8Array[]): AsyncGenerator<Uint8Array> {
  for (const p of parts) yield p;
}

async function parse(parts: Uint8Array[], signal = new AbortController().signal): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const e of parseSse("test", chunks(parts), signal)) out.push(e);
  return out;
}

const lineEnds = { "\\n": "\n", "\\r\\n": "\r\n", "\\r": "\r" } as const;

for (const [name, end] of Object.entries(lineEnds)) {
  const bytes = Buffer.from(recorded.replaceAll("\n", end), "utf8");

  t.test(`${name} line ends: one chunk`, async (t) => {
    t.same(await parse([bytes]), expected);
  });

  t.test(`${name} line ends: split at every byte`, async (t) => {
    const failures: number[] = [];
    for (let i = 1; i < bytes.length; i++) {
      const got = await parse([bytes.subarray(0, i), bytes.subarray(i)]);
      if (JSON.stringify(got) !== JSON.stringify(expected)) failures.push(i);
    }
    t.same(failures, [], `every one of ${bytes.length - 1} split points yields the same events`);
  });

  t.test(`${name} line ends: one byte at a time`, async (t) => {
    t.same(await parse([...bytes].map((b) => Uint8Array.of(b))), expected);
  });
}

for (const [name, end] of Object.entries(lineEnds)) {
  t.test(`${name} line ends: an event is yielded as soon as its blank line arrives, before the body goes on`, async (t) => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    async function* body(): AsyncGenerator<Uint8Array> {
      yield Buffer.from(`data: one${end}${end}`);
      await gate;
      yield Buffer.from(`data: two${end}${end}`);
    }
    const it = parseSse("test", body(), new AbortController().signal);
    t.same((await it.next()).value, { event: undefined, data: "one" }, "first event before the rest is sent");
    release();
    t.same((await it.next()).value, { event: undefined, data: "two" });
    t.equal((await it.next()).done, true);
  });
}

t.test("a last event without its blank line is still delivered; events without data are not", async (t) => {
  t.same(await parse([Buffer.from("event: lonely\n\ndata: tail\n")]), [{ event: undefined, data: "tail" }]);
});

t.test("a transport failure becomes a connection ProviderCallError; an abort keeps its reason", async (t) => {
  async function* failing(): AsyncGenerator<Uint8Array> {
    yield Buffer.from("data: one\n\n");
    throw new Error("socket hang up");
  }
  const got: SseEvent[] = [];
  const e = await (async () => {
    for await (const ev of parseSse("acme", failing(), new AbortController().signal)) got.push(ev);
  })().catch((x: unknown) => x);
  t.same(got, [{ event: undefined, data: "one" }]);
  t.ok(isProviderCallError(e) && e.kind === "connection" && e.provider === "acme", "classified as a connection failure");

  const ctl = new AbortController();
  const reason = new Error("client left");
  ctl.abort(reason);
  const aborted = await parse([Buffer.from("data: one\n\n")], ctl.signal).then(
    async () => {
      for await (const _ of parseSse("acme", failing(), ctl.signal)) void _;
    },
  ).catch((x: unknown) => x);
  t.equal(aborted, reason, "the abort reason, not a provider failure");
});
