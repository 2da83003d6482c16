/**
 * Errors Node's HTTP parser meets before a request reaches Koa (bad framing, headers too large,
 * a request that does not arrive in time) answered like every other Folio error: a JSON body
 * `{"error":{"code","message"}}` with `X-Request-Id`, then the connection is closed, because
 * after a framing error or a timeout nothing more on it can be trusted.
 */
import { maxHeaderSize, type ServerResponse, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { newRequestId } from './requestIds.js';

export interface ClientErrorAnswer {
  status: number;
  code: string;
  message: string;
}

/** The answer for a parser or timeout error, or null when none can be sent (the peer is gone). */
export function clientErrorAnswer(error: NodeJS.ErrnoException): ClientErrorAnswer | null {
  switch (error.code) {
    case 'ECONNRESET':
      return null;
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        code: 'headers_too_large',
        message: `The request line and headers are larger than the server accepts (${maxHeaderSize} bytes).`,
      };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return {
        status: 413,
        code: 'payload_too_large',
        message: 'The chunk extensions of the request body are too large.',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return {
        status: 408,
        code: 'request_timeout',
        message: 'The request (headers and body) did not arrive in time; the connection is closed.',
      };
    default:
      return {
        status: 400,
        code: 'bad_request',
        message: 'The request is not valid HTTP/1.1 (bad request line, header or body framing).',
      };
  }
}

/** The complete HTTP/1.1 response for an answer, ready for the socket. */
export function clientErrorResponse(answer: ClientErrorAnswer, requestId: string): string {
  const body = JSON.stringify({ error: { code: answer.code, message: answer.message } });
  return [
    `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status] ?? 'Error'}`,
    'Content-Type: application/json; charset=utf-8',
    `Content-Length: ${Buffer.byteLength(body)}`,
    `X-Request-Id: ${requestId}`,
    'Connection: close',
    '',
    body,
  ].join('\r\n');
}

/** Responses of requests Koa held when this module answered for them, with the status sent. */
const answeredInFlight = new WeakMap<ServerResponse, number>();

/**
 * The status sent for a request Koa was still handling (its body late) when the connection was
 * answered here; Koa itself only sees the body read fail, so the access log asks this first.
 */
export function clientErrorStatus(res: ServerResponse): number | undefined {
  return answeredInFlight.get(res);
}

/**
 * The server's `clientError` listener. As Node's own default does, it answers only while the
 * socket is writable and no response on it has started (a second status line in the middle of a
 * response would corrupt what the client reads), then destroys the socket.
 */
export function answerClientError(error: NodeJS.ErrnoException, socket: Duplex): void {
  const answer = clientErrorAnswer(error);
  // Node attaches the in-flight response to the socket; it is not part of the typed API.
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  if (answer && socket.writable && !inFlight?.headersSent) {
    // A request Koa already holds (its body late) keeps its id, so the answer matches the log.
    const known = inFlight?.getHeader('X-Request-Id');
    if (inFlight) answeredInFlight.set(inFlight, answer.status);
    socket.end(clientErrorResponse(answer, typeof known === 'string' ? known : newRequestId()));
  }
  socket.destroy();
}
