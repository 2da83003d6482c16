/**
 * Reading the rest of a request body the server has already refused. Closing a socket that still
 * holds unread request bytes makes the kernel answer with a reset, and a client still sending
 * may then lose the refusal itself; reading (and dropping) a bounded remainder first lets the
 * client finish sending and read the answer, as nginx's "lingering close" does: before the
 * answer (`drainRequest`, the connection then kept) or after it (`closeAfterLingering`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Resolves true once the body has been read to its end, false when a bound was met first. */
export function drainRequest(req: IncomingMessage, maxBytes: number, maxMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (req.complete || req.destroyed) {
      resolve(req.complete);
      return;
    }
    let seen = 0;
    const finish = (drained: boolean) => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      if (!drained) req.pause();
      resolve(drained);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > maxBytes) finish(false);
    };
    const onEnd = () => finish(true);
    const onError = () => finish(false);
    const timer = setTimeout(() => finish(false), maxMs);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.resume();
  });
}

/**
 * Answer with `Connection: close` and close once the answer is written, but only after reading
 * and dropping what the client still sends, within bounds: the answer goes out at once, and a
 * client still writing its body reads it instead of a reset.
 */
export function closeAfterLingering(
  req: IncomingMessage,
  res: ServerResponse,
  maxBytes: number,
  maxMs: number,
): void {
  res.setHeader('Connection', 'close');
  res.once('finish', () => {
    const socket = req.socket;
    // Node has just ended the socket (Connection: close) and would destroy it as soon as that
    // end is flushed, unread bytes and all: keep it open, reading, until the client stops
    // sending or a bound is met.
    socket.removeListener('finish', socket.destroy);
    void drainRequest(req, maxBytes, maxMs).then(() => socket.destroy());
  });
}
