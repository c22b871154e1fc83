// The exact bytes the hostile upstream writes for one request and behaviour: the tag it read always goes in the body.
import { answerContent } from './contract-bodies.ts';
import type { StrayKind, UpstreamBehaviour } from './script.ts';

/** One write of the upstream: after its delay, then (a slow body's rest) once the client has `after` or `capMs` passed. */
export interface AnswerPart {
  delayMs: number;
  bytes: string;
  waitFor?: { tag: string; seen: string; capMs: number };
}

export interface AnswerPlan {
  /** Written in order. */
  parts: AnswerPart[];
  /** After the last part: keep the connection, end it (FIN), or end it and read no further (after a 101). */
  after: 'keep' | 'end' | 'stop';
  /** Bytes owed after a HEAD, 204 or 304, written late (see UpstreamBehaviour.late). */
  late?: { bytes: string; ms: number };
}

const REASONS: Record<number, string> = {
  200: 'OK',
  201: 'Created',
  204: 'No Content',
  304: 'Not Modified',
  400: 'Bad Request',
  404: 'Not Found',
  409: 'Conflict',
  429: 'Too Many Requests',
  422: 'Unprocessable Content',
  503: 'Service Unavailable',
};

/** A complete, correctly framed response carrying `tag`: what a buggy backend writes where it should write nothing. */
/** The stray bytes of `kind` written after the answer tagged `tag` (UpstreamBehaviour.strayKind). */
export function strayBytes(kind: StrayKind | undefined, tag: string): string {
  if (kind === 'crlf') return '\r\n';
  if (kind === 'garbage') return 'zz\u0000\u00ff';
  return strayResponse(tag);
}

export function strayResponse(tag: string): string {
  const body = `[{"id":2,"name":"${tag}","categoryId":1}]`;
  return `HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
}

/** The Content-Language of an answer with `hopField` (UpstreamBehaviour.hopField). */
export const HOP_ANSWER_LANGUAGE = 'de';

/** Trailer fields after a chunked body's last chunk: read by the gateway's HTTP client, never relayed. */
const TRAILERS = 'X-Checksum: 7\r\nServer-Timing: db;dur=3\r\n';

function interimBytes(status: number): string {
  return status === 103 ? 'HTTP/1.1 103 Early Hints\r\nLink: </pets.css>; rel=preload\r\n\r\n' : 'HTTP/1.1 100 Continue\r\n\r\n';
}

export function planAnswer(method: string, target: string, tag: string, behaviour: UpstreamBehaviour): AnswerPlan {
  const { status } = behaviour;
  const interim = behaviour.interim.map(interimBytes).join('');
  if (behaviour.upgrade) {
    return {
      parts: [
        {
          delayMs: behaviour.headDelayMs,
          bytes: `${interim}HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n\x81\x05${tag}`,
        },
      ],
      after: 'stop',
    };
  }
  const noBody = method === 'HEAD' || status === 204 || status === 304;
  const { contentType, fields, body } = answerContent(status, method, target, tag, behaviour);
  // A transfer coding the gateway cannot relay frames the body in chunks, on any status (a 204's or 304's too, where it has no business).
  const coding = behaviour.transferCoding;
  const chunked = (behaviour.framing === 'chunked' || coding !== undefined) && status !== 204 && status !== 304;
  let framing = '';
  if (coding !== undefined) framing = coding.map((line) => `Transfer-Encoding: ${line}\r\n`).join('');
  else if (chunked) framing = 'Transfer-Encoding: chunked\r\n';
  else if (status !== 204 && status !== 304) {
    const declared = behaviour.lie === 'shorter' ? body.length - 4 : behaviour.lie === 'longer' ? body.length + 10 : body.length;
    framing = `Content-Length: ${declared}\r\n`;
  }
  const id = behaviour.answerId === 'echo' ? `X-Request-Id: ${tag}\r\n` : behaviour.answerId === 'wrong' ? 'X-Request-Id: someone-else-0000\r\n' : '';
  const head =
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Whatever'}\r\n` +
    `Content-Type: ${contentType}\r\n` +
    id +
    fields +
    (behaviour.hopField === 'listed' ? `Content-Language: ${HOP_ANSWER_LANGUAGE}\r\nConnection: Content-Language\r\n` : '') +
    (behaviour.hopField === 'unlisted' ? `Content-Language: ${HOP_ANSWER_LANGUAGE}\r\n` : '') +
    framing +
    `Connection: ${behaviour.connectionClose ? 'close' : 'keep-alive'}\r\n\r\n`;

  let wire = '';
  if (!noBody) {
    if (!chunked) wire = body;
    else if (behaviour.lie === 'longer') wire = `${(body.length + 10).toString(16)}\r\n${body}`;
    else wire = `${body.length.toString(16)}\r\n${body}\r\n0\r\n${behaviour.trailers === true ? TRAILERS : ''}\r\n`;
  }
  if (behaviour.closeMidBody) wire = wire.slice(0, Math.floor(wire.length / 2));
  // A slow body is cut just after its tag, inside the body: never between the answer and the bytes that follow it in its write.
  const tagEnd = body.indexOf(tag) + tag.length;
  const split = behaviour.trickleMs !== undefined && !noBody && tagEnd < body.length ? wire.indexOf(tag) + tag.length : -1;
  if (behaviour.crlfSameWrite === true && !behaviour.closeMidBody) wire += '\r\n';
  if (behaviour.extraSameWrite && !behaviour.closeMidBody) wire += strayResponse(tag);

  const parts: AnswerPart[] =
    behaviour.bodyDelayMs > 0 && wire !== ''
      ? [
          { delayMs: behaviour.headDelayMs, bytes: interim + head },
          { delayMs: behaviour.bodyDelayMs, bytes: wire },
        ]
      : [{ delayMs: behaviour.headDelayMs, bytes: interim + head + wire }];
  // A slow body: its last part cut there, the rest written once the client has the first part (or at the cap).
  if (split >= tag.length && behaviour.trickleMs !== undefined) {
    const last = parts.pop()!;
    const cut = last.bytes.length - wire.length + split;
    const seen = body.slice(0, tagEnd);
    parts.push({ ...last, bytes: last.bytes.slice(0, cut) }, { delayMs: 0, bytes: last.bytes.slice(cut), waitFor: { tag, seen, capMs: behaviour.trickleMs } });
  }
  const ends = behaviour.closeMidBody || behaviour.connectionClose;
  return {
    parts,
    after: ends ? 'end' : 'keep',
    ...(behaviour.strayAfter === true && !ends
      ? { late: { bytes: strayBytes(behaviour.strayKind, tag), ms: behaviour.lateMs } }
      : noBody && behaviour.late && !ends
        ? { late: { bytes: strayResponse(tag), ms: behaviour.lateMs } }
        : {}),
  };
}
