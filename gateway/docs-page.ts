// GET /docs: the OpenAPI document (/v1/openapi.json) rendered by Swagger UI,
// whose files come from the swagger-ui-dist npm package and are served here
// (no CDN). Each file is read on first request and kept in memory; the
// bundle is ~1.5 MB, so it is cached by browsers for an hour.
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import type { PageAnswer, PlainPage } from "./server.ts";

// Swagger UI renders a blank page without the charset (seen with swagger-ui-dist 5.35.0).
const docsHtml = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Troupe API reference</title>
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/swagger-ui-standalone-preset.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>
`;

// A separate file rather than an inline script, so the page works under a script-src 'self' policy.
const initScript = `window.ui = SwaggerUIBundle({
  url: "/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
  layout: "StandaloneLayout",
  validatorUrl: null
});
`;

// Nothing outside this origin: no CDN, no font host, no online validator.
const policy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

const assets: Record<string, string> = {
  "swagger-ui.css": "text/css; charset=utf-8",
  "swagger-ui-bundle.js": "text/javascript; charset=utf-8",
  "swagger-ui-standalone-preset.js": "text/javascript; charset=utf-8",
};

function distDir(): string {
  return dirname(createRequire(import.meta.url).resolve("swagger-ui-dist/package.json"));
}

export function docsPages(): PlainPage[] {
  const cache = new Map<string, Promise<Buffer>>();
  const asset = (name: string, contentType: string): PlainPage => ({
    path: `/docs/${name}`,
    async respond(): Promise<PageAnswer> {
      let body = cache.get(name);
      if (!body) {
        body = readFile(join(distDir(), name));
        cache.set(name, body);
        body.catch(() => cache.delete(name));
      }
      return { status: 200, contentType, body: await body, headers: [["cache-control", "public, max-age=3600"]] };
    },
  });
  return [
    { path: "/docs", respond: async () => ({ status: 200, contentType: "text/html; charset=utf-8", body: docsHtml, headers: [["content-security-policy", policy]] }) },
    { path: "/docs/init.js", respond: async () => ({ status: 200, contentType: "text/javascript; charset=utf-8", body: initScript }) },
    ...Object.entries(assets).map(([name, type]) => asset(name, type)),
  ];
}
