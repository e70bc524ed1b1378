// The SSE writer against a recording stand-in for uWS's response: the first
// event leaves at once, later ones in one write per event-loop turn, [DONE]
// rides with the last, and a full socket makes senders wait for onWritable.
import t from "tap";
import { ResponseState } from "../../gateway/http-io.ts";
import { openSse, type SseResponse } from "../../gateway/sse.ts";

interface Recorder {
  res: SseResponse;
  writes: string[];
  ended: string[];
  headers: [string, string][];
  /** What write() answers: false means the socket buffer is full. */
  accept: boolean;
  writable: (() => boolean) | undefined;
}

function recorder(): Recorder {
  const r: Recorder = { writes: [], ended: [], headers: [], accept: true, writable: undefined, res: undefined as unknown as SseResponse };
  const res = {
    cork(cb: () => void) {
      cb();
      return res;
    },
    writeStatus(status: string) {
      r.headers.push([":status", status]);
      return res;
    },
    writeHeader(name: string, value: string) {
      r.headers.push([name, value]);
      return res;
    },
    write(chunk: string) {
      r.writes.push(chunk);
      return r.accept;
    },
    end(chunk: string) {
      r.ended.push(chunk);
      return res;
    },
    onWritable(handler: () => boolean) {
      r.writable = handler;
      return res;
    },
  };
  r.res = res as unknown as SseResponse;
  return r;
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

t.test("first event at once with the headers; later events of one turn in one write; [DONE] with the last", async (t) => {
  const r = recorder();
  const sse = openSse(r.res, new ResponseState(), "req_1");
  await sse.send({ delta: "Hello" });
  t.same(r.writes, ['data: {"delta":"Hello"}\n\n'], "the first event is written before send() returns");
  t.same(r.headers.slice(0, 2), [[":status", "200 OK"], ["content-type", "text/event-stream; charset=utf-8"]]);
  t.ok(r.headers.some(([n, v]) => n === "x-request-id" && v === "req_1"));
  await sse.send({ delta: " there" });
  await sse.send({ delta: "!" });
  t.equal(r.writes.length, 1, "later events wait for the end of the turn");
  await turn();
  t.same(r.writes[1], 'data: {"delta":" there"}\n\ndata: {"delta":"!"}\n\n', "and leave together");
  await sse.send({ finish_reason: "stop" });
  sse.done();
  t.same(r.ended, ['data: {"finish_reason":"stop"}\n\ndata: [DONE]\n\n'], "the last event rides with [DONE]");
  await turn();
  t.equal(r.writes.length, 2, "nothing is written after the end");
  t.ok(sse.closed);
});

t.test("a full socket holds the sender until onWritable", async (t) => {
  const r = recorder();
  const sse = openSse(r.res, new ResponseState(), "req_2");
  r.accept = false;
  let resolved = false;
  const waiting = sse.send({ delta: "a" }).then(() => (resolved = true)); // written; the socket reports full
  t.ok(r.writable, "waits on onWritable");
  await turn();
  await turn();
  t.notOk(resolved, "the producer is held while the socket is full");
  r.accept = true;
  t.equal(r.writable!(), true);
  await waiting;
  t.ok(resolved, "and released once it drains");
  await sse.send({ delta: "b" });
  await turn();
  t.same(r.writes, ['data: {"delta":"a"}\n\n', 'data: {"delta":"b"}\n\n']);
});

t.test("a client that leaves releases a waiting sender and stops writes", async (t) => {
  const r = recorder();
  const state = new ResponseState();
  const sse = openSse(r.res, state, "req_3");
  r.accept = false;
  const waiting = sse.send({ delta: "a" });
  state.markAborted();
  await waiting;
  t.ok(sse.closed);
  await sse.send({ delta: "c" });
  sse.done();
  await turn();
  t.equal(r.writes.length, 1, "nothing more after the abort");
  t.same(r.ended, []);
});
