// The baseline: a bare uWS handler that reads a JSON body and answers a
// constant, with none of Troupe's pipeline. Prints its port.
import * as uWS from "uWebSockets.js";

const app = uWS.App();
app.post("/*", (res) => {
  let aborted = false;
  res.onAborted(() => (aborted = true));
  const chunks: Buffer[] = [];
  res.onData((chunk, isLast) => {
    chunks.push(Buffer.from(chunk.slice(0)));
    if (!isLast || aborted) return;
    JSON.parse(Buffer.concat(chunks).toString("utf8"));
    res.cork(() => {
      res.writeHeader("content-type", "application/json");
      res.end('{"ok":true}');
    });
  });
});
app.listen("127.0.0.1", 0, (socket) => {
  if (!socket) process.exit(1);
  process.stdout.write(`PORT=${uWS.us_socket_local_port(socket)}\n`);
});
