// Which URLs name this Troupe's own file route: under PUBLIC_URL (its path
// included) or at the listen address (every name of a wildcard or loopback
// listen, on the listen port), one id segment after /v1/files/, query and
// fragment ignored; anything else — another port, another path, a URL with
// credentials — is not ours and goes to the outbound guard.
import t from "tap";
import { networkInterfaces } from "node:os";
import { PublicUrl } from "../../../gateway/features/public-url.ts";

const id = "file_AAAAAAAAAAAAAAAAAAAAAA";

t.test("the listen address: loopback names on the listen port", async (t) => {
  const p = new PublicUrl(undefined);
  t.equal(p.listening("127.0.0.1", 8080), "http://127.0.0.1:8080");
  for (const url of [`http://127.0.0.1:8080/v1/files/${id}`, `http://localhost:8080/v1/files/${id}`, `http://LocalHost:8080/v1/files/${id}?a=1#b`]) t.equal(p.fileIdOf(url), id, url);
  for (const url of [
    `http://127.0.0.1:8081/v1/files/${id}`,
    `https://127.0.0.1:8080/v1/files/${id}`,
    `http://[::1]:8080/v1/files/${id}`,
    `http://127.0.0.1:8080/v1/files/${id}/x`,
    `http://127.0.0.1:8080/v1/files/`,
    `http://127.0.0.1:8080/v1/models`,
    `http://u:p@127.0.0.1:8080/v1/files/${id}`,
    `http://127.0.0.2:8080/v1/files/${id}`,
    "not a url",
  ]) t.equal(p.fileIdOf(url), undefined, url);
  t.equal(p.fileIdOf(`http://127.0.0.1:8080/v1/x/../files/${id}`), id, "dot segments resolve as the URL parser resolves them");
});

t.test("a wildcard listen: localhost and every interface address", async (t) => {
  const p = new PublicUrl(undefined);
  t.equal(p.listening("0.0.0.0", 9000), "http://localhost:9000");
  t.equal(p.fileIdOf(`http://localhost:9000/v1/files/${id}`), id);
  const v4 = Object.values(networkInterfaces()).flatMap((l) => l ?? []).filter((a) => a.family === "IPv4");
  for (const a of v4) t.equal(p.fileIdOf(`http://${a.address}:9000/v1/files/${id}`), id, a.address);
  t.equal(p.fileIdOf(`http://[::1]:9000/v1/files/${id}`), undefined, "0.0.0.0 does not listen on IPv6");
  const dual = new PublicUrl(undefined);
  dual.listening("::", 9000);
  t.equal(dual.fileIdOf(`http://[::1]:9000/v1/files/${id}`), id, ":: takes both");
});

t.test("PUBLIC_URL, path and all, besides the listen address", async (t) => {
  const p = new PublicUrl("https://Troupe.Example.com:443/api/");
  t.equal(p.listening("127.0.0.1", 8080), "https://Troupe.Example.com:443/api", "the configured URL is kept as given");
  t.equal(p.fileIdOf(`https://troupe.example.com/api/v1/files/${id}`), id);
  t.equal(p.fileIdOf(`http://127.0.0.1:8080/v1/files/${id}`), id);
  t.equal(p.fileIdOf(`https://troupe.example.com/v1/files/${id}`), undefined, "outside its path");
  t.equal(p.fileIdOf(`http://troupe.example.com/api/v1/files/${id}`), undefined, "another scheme is another origin");
  t.equal(p.fileIdOf(`https://troupe.example.com.evil.test/api/v1/files/${id}`), undefined);
});
