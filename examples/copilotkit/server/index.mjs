// One Node process: the built page (dist/) and CopilotKit's runtime at /api/copilotkit, whose
// agent "demo" is durable-agui's demo agent. The page and the runtime share an origin, and the
// runtime calls durable-agui server to server (the durable-agui API refuses cross-site writes
// from a browser, README "Access control").
//
//   DURABLE_AGUI_URL  the durable-agui API (default http://127.0.0.1:8000)
//   PORT, HOST        where this serves (default 3000 on 127.0.0.1)
import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";

import { CopilotRuntime } from "@copilotkit/runtime/v2";
import { createCopilotNodeListener } from "@copilotkit/runtime/v2/node";

import { DurableAgent, DurableAgentRunner } from "./durable.mjs";

const SERVER_URL = (process.env.DURABLE_AGUI_URL ?? "http://127.0.0.1:8000").replace(/\/$/, "");
const PORT = Number(process.env.PORT ?? 3000);
const HOST = process.env.HOST ?? "127.0.0.1";
const RUNTIME_PATH = "/api/copilotkit";
const DIST = fileURLToPath(new URL("../dist/", import.meta.url));
const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".woff2": "font/woff2",
  ".woff": "font/woff",
  ".ttf": "font/ttf",
  ".json": "application/json",
};

const agents = { demo: new DurableAgent({ url: `${SERVER_URL}/agents/demo` }) };
const runtime = new CopilotRuntime({
  agents,
  runner: new DurableAgentRunner({ serverUrl: SERVER_URL, agents }),
});
const copilotkit = createCopilotNodeListener({ runtime, basePath: RUNTIME_PATH });

async function sendFile(response, path) {
  try {
    const body = await readFile(path);
    response.writeHead(200, { "Content-Type": TYPES[extname(path)] ?? "application/octet-stream" });
    response.end(body);
    return true;
  } catch {
    return false;
  }
}

const server = createServer(async (request, response) => {
  const { pathname } = new URL(request.url, "http://page");
  if (pathname === RUNTIME_PATH || pathname.startsWith(`${RUNTIME_PATH}/`)) {
    return copilotkit(request, response);
  }
  const file = normalize(join(DIST, decodeURIComponent(pathname)));
  if (file.startsWith(DIST) && pathname !== "/" && (await sendFile(response, file))) return;
  if (await sendFile(response, join(DIST, "index.html"))) return;
  response.writeHead(404, { "Content-Type": "text/plain" });
  response.end("Build the page first: npm run build\n");
});

server.listen(PORT, HOST, () => {
  console.log(`copilotkit page on http://${HOST}:${PORT} (durable-agui at ${SERVER_URL})`);
});

for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    server.close();
    server.closeAllConnections();
    process.exit(0);
  });
}
