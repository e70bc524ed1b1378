// Body limits of the routes whose valid bodies are small: a form's few
// fields (login, signup, the account and key forms). MAX_BODY_BYTES (10 MiB
// by default) is sized for chat histories and uploads; a route that needs a
// few KiB declares this instead (RouteDefinition.maxBodyBytes), so a
// stranger cannot make the server read, parse and validate megabytes on a
// public route (a 5.5 MB login body of unknown keys held the event loop for
// over a second).

/**
 * 16 KiB: signup, the largest form, is about 6 KiB with every field at its
 * longest in UTF-8 (a 1,024-code-point password at 4 bytes each, a 254-byte
 * email, two 200-code-point names).
 */
export const formBodyMaxBytes = 16 * 1024;
