/**
 * test/node/forward.ts: runs inside the node cluster's network namespace and carries the API
 * server's port out of it: it listens on a unix socket (path sockets are not bound to a network
 * namespace) and connects each client to HOST:PORT inside the namespace. cluster.ts listens on
 * the host's loopback and connects to this socket, so kubectl and client-node on the host reach
 * the API server without any route into the namespace.
 *   node test/node/forward.ts SOCKET HOST PORT
 * Must not touch: anything but that socket; it connects to no other address.
 */
import fs from 'node:fs';
import net from 'node:net';

const [socketPath, host, port] = process.argv.slice(2);
if (!socketPath || !host || !port) {
  process.stderr.write('usage: forward.ts SOCKET HOST PORT\n');
  process.exit(2);
}
fs.rmSync(socketPath, { force: true });
const server = net.createServer((client) => {
  const upstream = net.connect(Number(port), host);
  client.pipe(upstream).pipe(client);
  client.on('error', () => upstream.destroy());
  upstream.on('error', () => client.destroy());
});
server.listen(socketPath, () => fs.chmodSync(socketPath, 0o600));
for (const signal of ['SIGTERM', 'SIGINT'] as const) process.on(signal, () => process.exit(0));
