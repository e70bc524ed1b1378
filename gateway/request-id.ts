// X-Request-Id of every response (the JSON routes, the files handler, the
// fallbacks): the caller's value when it is well-formed, else a generated one.

const requestIdPattern = /^[A-Za-z0-9._:-]{1,128}$/;

// Generated request ids: a random per-process prefix and a counter. Unique
// across replicas and restarts, and far cheaper than a UUID per request.
const bootPrefix = `req_${crypto.randomUUID().slice(0, 8)}`;
let requestCounter = 0;

export function pickRequestId(incoming: string | undefined): string {
  if (incoming && requestIdPattern.test(incoming)) return incoming;
  requestCounter += 1;
  return `${bootPrefix}_${requestCounter.toString(36)}`;
}
