// An MCP client built on the official TypeScript SDK: connects over Streamable HTTP with an optional
// bearer token, lists the tools and calls one. Prints one JSON line describing what happened.
// Usage: node sdk_http_client.cjs URL TOKEN|"" TOOL
const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = require('@modelcontextprotocol/sdk/client/streamableHttp.js');

async function main() {
  const [url, token, tool] = process.argv.slice(2);
  const headers = token ? { Authorization: `Bearer ${token}` } : {};
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } });
  const client = new Client({ name: 'dw-sdk-http-test', version: '1.0.0' });
  try {
    await client.connect(transport);
  } catch (e) {
    console.log(JSON.stringify({ connected: false, error: String((e && e.message) || e), code: e && e.code }));
    return;
  }
  const listed = await client.listTools();
  const res = await client.callTool({ name: tool, arguments: {} });
  console.log(JSON.stringify({
    connected: true,
    protocol: transport.protocolVersion || '',
    tools: listed.tools.map((t) => t.name),
    isError: !!res.isError,
    structured: res.structuredContent,
  }));
  await client.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
