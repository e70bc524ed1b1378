// What troupe-load prints comes partly from the server it measures (error
// codes and messages, request ids, model ids): a hostile or broken server
// could otherwise move the cursor, retitle the terminal or plant a link
// with ANSI/OSC escape sequences. Control characters are shown, not sent.

/** C0 controls but tab, DEL, and C1 controls (ESC alone starts CSI and OSC). */
const controls = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g;

/** One line of terminal text: every control character written as its \uXXXX escape. */
export function terminalSafe(text: string): string {
  return text.replace(controls, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
