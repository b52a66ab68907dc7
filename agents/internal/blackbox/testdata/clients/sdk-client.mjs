// sdk-client.mjs SDK_DIR MCP_JSON: connect the official TypeScript MCP SDK client to every server a
// .mcp.json names, exactly as an MCP host does (command, args and env from the file, started in the
// current directory), list its tools, prompts and resources, and call check_connections (the SDK
// checks structured results against each tool's output schema). Prints one JSON report on stdout.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [sdkDir, mcpJson] = process.argv.slice(2);
const load = (p) => import(pathToFileURL(join(sdkDir, "dist", "esm", p)).href);
const { Client } = await load("client/index.js");
const { StdioClientTransport, getDefaultEnvironment } = await load("client/stdio.js");

const servers = JSON.parse(readFileSync(mcpJson, "utf8")).mcpServers;
const report = {};
for (const [name, spec] of Object.entries(servers)) {
  const r = { name };
  report[name] = r;
  const transport = new StdioClientTransport({
    command: spec.command,
    args: spec.args ?? [],
    env: { ...getDefaultEnvironment(), ...(spec.env ?? {}) },
    cwd: process.cwd(),
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (d) => { stderr += d; });
  const client = new Client({ name: "dw-sdk-check", version: "1.0.0" });
  try {
    await client.connect(transport, { timeout: 30000 });
    r.server = client.getServerVersion();
    r.capabilities = Object.keys(client.getServerCapabilities() ?? {}).sort();
    r.tools = (await client.listTools()).tools.map((t) => ({ name: t.name, title: t.title ?? t.annotations?.title ?? "" }));
    const res = await client.callTool({ name: "check_connections", arguments: {} });
    r.check_connections = { isError: res.isError ?? false, agent: res.structuredContent?.agent, store_ok: res.structuredContent?.store?.ok, store_path: res.structuredContent?.store?.path };
    if (client.getServerCapabilities()?.prompts) {
      r.prompts = (await client.listPrompts()).prompts.map((p) => p.name).sort();
    }
    if (client.getServerCapabilities()?.resources) {
      r.resources = (await client.listResources()).resources.map((x) => x.uri).sort();
      r.resource_templates = (await client.listResourceTemplates()).resourceTemplates.map((x) => x.uriTemplate).sort();
    }
  } catch (e) {
    r.error = String(e?.stack ?? e);
    r.stderr = stderr.slice(-4000);
  } finally {
    await client.close().catch(() => {});
  }
}
process.stdout.write(JSON.stringify(report, null, 2) + "\n");
