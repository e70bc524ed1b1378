// Settings uWS reads from the environment once, when its binary loads (it
// is read by a static initializer, checked: setting it after the import has
// no effect). This module must therefore be imported before anything that
// imports uWebSockets.js: it is the first import of gateway/app.ts and
// gateway/main.ts. A fixed value, not configuration: gateway/request-guards.ts
// relies on it to answer over-long URLs with 414 rather than 431.

/**
 * The largest request head uWS accepts (request line + headers), in bytes;
 * beyond it uWS answers 431 itself. Its default (4 KiB) made any URL over
 * ~4 KiB a 431; at 16 KiB, URLs between 8 KiB (maxUrlBytes) and this get
 * their own 414 from the gateway.
 */
export const maxHeadBytes = 16 * 1024;

process.env["UWS_HTTP_MAX_HEADERS_SIZE"] = String(maxHeadBytes);
