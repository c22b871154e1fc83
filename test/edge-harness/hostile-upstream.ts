// A raw TCP upstream that parses requests itself, records them per connection, and answers each per its tag's behaviour.
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { planAnswer } from './answer-bytes.ts';
import { parseRequest, type ParsedRequest } from './request-parser.ts';
import { PLAIN_ANSWER, type UpstreamBehaviour } from './script.ts';
import type { RestWritten, Sightings } from './sightings.ts';

export interface UpstreamConnection {
  /** Every byte received, latin1. */
  raw: string;
  requests: ParsedRequest[];
  /** Why parsing stopped, when the gateway sent something this parser refuses. */
  parseError?: string;
}

export interface HostileUpstream {
  port: number;
  baseUrl: string;
  connections: UpstreamConnection[];
  /** By tag: for each slow body whose rest was written, whether its client had the first part by then. */
  rests: Map<string, RestWritten>;
  close(): Promise<void>;
}

export async function startHostileUpstream(behaviours: Readonly<Record<string, UpstreamBehaviour>>, sightings: Sightings): Promise<HostileUpstream> {
  const connections: UpstreamConnection[] = [];
  const rests = new Map<string, RestWritten>();
  const sockets = new Set<Socket>();

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    const record: UpstreamConnection = { raw: '', requests: [] };
    connections.push(record);
    let buffer = '';
    const queue: ParsedRequest[] = [];
    let answering = false;
    let stopped = false;
    /** Owed bytes of a HEAD/204/304, written before the next request is answered or when its timer fires. */
    let owed: { bytes: string; timer: NodeJS.Timeout } | undefined;
    const payOwed = () => {
      if (!owed) return;
      clearTimeout(owed.timer);
      if (!socket.destroyed) socket.write(owed.bytes);
      owed = undefined;
    };

    async function answerQueue(): Promise<void> {
      if (answering) return;
      answering = true;
      while (queue.length > 0 && !stopped && !socket.destroyed) {
        const request = queue.shift()!;
        payOwed();
        const tag = request.headers['x-request-id'] ?? '';
        const plan = planAnswer(request.method, request.target, tag, behaviours[tag] ?? PLAIN_ANSWER);
        for (const part of plan.parts) {
          if (part.delayMs > 0) await sleep(part.delayMs);
          if (part.waitFor !== undefined && !socket.destroyed) {
            const { tag: waited, seen, capMs } = part.waitFor;
            const how = await sightings.until(waited, seen, capMs);
            if (!socket.destroyed) rests.set(waited, how);
          }
          if (socket.destroyed) break;
          socket.write(part.bytes);
        }
        if (plan.after !== 'keep') {
          stopped = true;
          socket.end();
        } else if (plan.late) {
          const late = plan.late;
          owed = { bytes: late.bytes, timer: setTimeout(payOwed, late.ms) };
        }
      }
      answering = false;
    }

    socket.on('data', (chunk: Buffer) => {
      const text = chunk.toString('latin1');
      record.raw += text;
      if (stopped || record.parseError !== undefined) return;
      buffer += text;
      for (;;) {
        const step = parseRequest(buffer);
        if (step.kind === 'incomplete') break;
        if (step.kind === 'error') {
          record.parseError = step.reason;
          socket.destroy();
          return;
        }
        record.requests.push(step.request);
        queue.push(step.request);
        buffer = step.rest;
      }
      void answerQueue();
    });
    socket.on('close', () => {
      if (owed) clearTimeout(owed.timer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    baseUrl: `http://127.0.0.1:${port}/v1`,
    connections,
    rests,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
