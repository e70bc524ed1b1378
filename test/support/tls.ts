// A throwaway self-signed certificate for tests that serve HTTPS on loopback.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** An EC key and a one-day certificate for `commonName`, valid for `altNames` (e.g. "DNS:localhost", "IP:127.0.0.1"). */
export function selfSignedCertificate(commonName: string, altNames: string[]): { key: Buffer; cert: Buffer } {
  const dir = mkdtempSync(join(tmpdir(), "troupe-tls-"));
  // prettier-ignore
  execFileSync("openssl", [
    "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-days", "1",
    "-subj", `/CN=${commonName}`, "-addext", `subjectAltName=${altNames.join(",")}`,
    "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"),
  ], { stdio: "ignore" });
  return { key: readFileSync(join(dir, "key.pem")), cert: readFileSync(join(dir, "cert.pem")) };
}
