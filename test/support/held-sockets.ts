/**
 * Sockets a test holds against the admission endpoint as a client holding its connection limits
 * would (a request line and one header, then nothing), from any loopback address, and a wait for
 * some of many outcomes under a ceiling.
 */
import net from 'node:net';
import tls from 'node:tls';
import { SERVER_NAME } from './endpoint.ts';

/**
 * A TLS connection from `localAddress` (any 127.0.0.0/8 address is the loopback's on Linux) that
 * sends a request line and one header and then waits, as a client holding the cap would: `opened`
 * says whether the server let it in (its handshake done) or closed it; `closed` resolves when the
 * server closes it. `servername`: the certificate asked for (the unit tests' endpoint's by default).
 */
export function holdingSocket(port: number, caPem: string, localAddress: string, servername = SERVER_NAME) {
  const socket = tls.connect({ socket: net.connect({ host: '127.0.0.1', port, localAddress }), servername, ca: caPem });
  // Read (and dropped), so that the server's closing is seen.
  socket.on('error', () => undefined).resume();
  let isClosed = false;
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      isClosed = true;
      resolve();
    }),
  );
  const opened = new Promise<'held' | 'refused'>((resolve) => {
    socket.once('secureConnect', () => {
      socket.write('POST /admit/guards/replicas HTTP/1.1\r\nhost: x\r\n');
      resolve('held');
    });
    void closed.then(() => resolve('refused'));
  });
  return { socket, opened, closed, isClosed: () => isClosed };
}

/** Resolves once `count` of `promises` have, or after `ms`, with how many had. */
export async function settledWithin(promises: Promise<unknown>[], count: number, ms: number): Promise<number> {
  let settled = 0;
  await Promise.race([
    new Promise<void>((resolve) => {
      for (const p of promises) void p.then(() => ++settled >= count && resolve());
      if (count === 0) resolve();
    }),
    new Promise((r) => setTimeout(r, ms)),
  ]);
  return settled;
}
