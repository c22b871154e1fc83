// The invariants of a signal case, each a named check of what the case observed (signal-case.ts), following the documented rule
// (docs/operations.md, "Client connections": signals and drain): the first SIGTERM or SIGINT starts the drain, every repeat is
// logged and ignored (there is no escalation: SIGKILL ends the process), every accepted request is answered, then the process exits 0.
import { repeatIgnored, SHUTTING_DOWN, STOPPED } from '../helpers/gateway-group.ts';
import { parseReceived, type ReceivedResponse } from './response-parser.ts';
import { type ClientRead, LOG_DRAIN_MS, SIGNAL_GRACE_MS, SIGNAL_SLACK_MS, type SignalObservation } from './signal-case.ts';

type Check = (observed: SignalObservation) => string[];

/** The in-flight request's answer is its own 200, byte for byte what the backend wrote for it, under its X-Request-Id; one answer, nothing after it. */
export const inFlightAnsweredOnce: Check = ({ witness }) => {
  const stream = parseReceived(witness.bytes, () => false, true);
  const [answer, ...more] = stream.responses;
  if (answer === undefined) return [`the in-flight request got no answer (${witness.ended}, read ${JSON.stringify(witness.bytes.slice(0, 200))})`];
  const violations = ownAnswer(answer, witness.id, 200).map((detail) => `the in-flight request's answer: ${detail}`);
  if (answer.body !== witness.expectedBody) violations.push(`the in-flight request's body is not the backend's: ${JSON.stringify(answer.body.slice(0, 200))}`);
  if (more.length > 0 || stream.stray !== '') violations.push(`the in-flight request got more than one answer: ${JSON.stringify(witness.bytes.slice(0, 400))}`);
  return violations;
};

/** The shutdown is logged once, for the first signal sent. */
export const shutdownLoggedOnce: Check = ({ output, sent }) => {
  const lines = logLines(output, SHUTTING_DOWN);
  if (lines.length !== 1) return [`the shutdown line was logged ${lines.length} times`];
  const reason = lines[0]!.reason;
  return reason === sent[0]?.signal ? [] : [`the shutdown was logged for ${String(reason)}, the first signal was ${sent[0]?.signal}`];
};

/**
 * Every repeat the gateway took while the drain was surely on (before the backend let the in-flight answer go) is logged and
 * ignored, as `<SIGNAL> ignored`, naming the signal that started the drain; and no line is logged for a signal never delivered.
 * A repeat taken later may or may not be (the process may be writing its last lines). Under `npm start` a signal to the group
 * reaches the gateway once or twice (npm passes it on, and the two may merge): it counts as one delivery at least, two at most.
 */
export const repeatsLoggedAndIgnored: Check = ({ output, sent, releasedAt, signalCase }) => {
  const [first, ...repeats] = sent;
  if (first === undefined) return ['no signal was sent'];
  const violations: string[] = [];
  const ignored = logLines(output, '" ignored: the gateway is already draining');
  for (const line of ignored) {
    if (line.stopping !== first.signal) violations.push(`a repeat was logged as ignored while stopping for ${String(line.stopping)}, not ${first.signal}`);
  }
  const passedOnByNpm = (signal: (typeof sent)[number]) => signalCase.startedBy === 'npm start' && signal.to === 'group';
  for (const kind of ['SIGTERM', 'SIGINT'] as const) {
    const logged = logLines(output, repeatIgnored(kind)).length;
    const surely = repeats.filter((s) => s.signal === kind && !s.mayHaveMerged && s.takenBy !== undefined && s.takenBy < releasedAt).length;
    const deliveries = sent.filter((s) => s.signal === kind && s.reached).reduce((sum, s) => sum + (passedOnByNpm(s) ? 2 : 1), 0);
    const atMost = deliveries - (first.signal === kind ? 1 : 0);
    if (logged < surely) violations.push(`${surely} repeated ${kind} taken during the drain, ${logged} logged as ignored`);
    if (logged > atMost) violations.push(`${logged} repeated ${kind} logged as ignored, at most ${atMost} delivered`);
  }
  return violations;
};

/** The process exits 0 once the drain is over (the stop logged once), within the grace period of the first signal and the time its last lines take. */
export const exitedAfterDrain: Check = ({ exit, output, sent }) => {
  if (exit === undefined) return ['the process had not exited by the deadline'];
  const violations: string[] = [];
  if (exit.code !== 0) violations.push(`the process exited with ${exit.code === null ? `signal ${exit.signal}` : `code ${exit.code}`}, not 0`);
  const stops = logLines(output, STOPPED).length;
  if (stops !== 1) violations.push(`the stop was logged ${stops} times`);
  const startedAt = sent[0]?.takenBy ?? sent[0]?.sentAt ?? exit.at;
  const tookMs = exit.at - startedAt;
  if (tookMs > SIGNAL_GRACE_MS + LOG_DRAIN_MS + SIGNAL_SLACK_MS) violations.push(`the process exited ${Math.round(tookMs)} ms after the first signal`);
  return violations;
};

/**
 * No connection is accepted once the shutdown has begun: the listener closes at once (shutdown.drainDelayMs is 0), and a client
 * connecting once the shutdown is logged is refused at TCP, or, had the listener taken it before it closed, gets one whole answer,
 * with Connection: close; never a half answer.
 */
export const noConnectionAfterShutdown: Check = ({ listenerClosedAt, latecomer }) => {
  const violations: string[] = [];
  if (listenerClosedAt === undefined) violations.push(`the listener still accepted connections ${SIGNAL_SLACK_MS} ms after the first signal was taken`);
  if (latecomer !== undefined) violations.push(...latecomerViolations(latecomer));
  return violations;
};

function latecomerViolations(latecomer: ClientRead): string[] {
  if (latecomer.bytes === '') return latecomer.ended === 'timeout' ? ['a client connecting after the shutdown was held without an answer'] : [];
  const stream = parseReceived(latecomer.bytes, () => false, true);
  const [answer, ...more] = stream.responses;
  if (answer === undefined || !answer.complete || more.length > 0 || stream.stray !== '')
    return [`a client connecting after the shutdown got a half answer (${latecomer.ended}): ${JSON.stringify(latecomer.bytes.slice(0, 300))}`];
  const violations = ownAnswer(answer, latecomer.id, answer.status).map((detail) => `a client connecting after the shutdown: ${detail}`);
  if (answer.headers.connection?.toLowerCase() !== 'close') violations.push('a client connecting after the shutdown was answered without Connection: close');
  if (answer.status !== 200) violations.push(...errorBodyViolations(answer));
  return violations;
}

/** An answer's own status, its X-Request-Id `id`, application/json, whole. */
function ownAnswer(answer: ReceivedResponse, id: string, status: number): string[] {
  const violations: string[] = [];
  if (answer.status !== status) violations.push(`status ${answer.status}, not ${status}${answer.status === 200 ? '' : `: ${answer.body.slice(0, 200)}`}`);
  if (!answer.complete) violations.push('its body was cut');
  if (answer.headers['x-request-id'] !== id) violations.push(`X-Request-Id ${String(answer.headers['x-request-id'])}, not ${id}`);
  if (!answer.headers['content-type']?.startsWith('application/json')) violations.push(`Content-Type ${String(answer.headers['content-type'])}`);
  return violations;
}

/** A refusal is an Error body: {code, message, status}, its status the answer's. */
function errorBodyViolations(answer: ReceivedResponse): string[] {
  try {
    const body = JSON.parse(answer.body) as { code?: unknown; message?: unknown; status?: unknown };
    if (typeof body.code === 'string' && typeof body.message === 'string' && body.status === answer.status) return [];
  } catch {
    // Not JSON: reported below.
  }
  return [`a refusal without an Error body: ${answer.status} ${answer.body.slice(0, 200)}`];
}

/** The gateway's JSON log lines that contain `marker`. */
function logLines(output: string, marker: string): Array<Record<string, unknown>> {
  return output
    .split('\n')
    .filter((line) => line.includes(marker))
    .map((line) => {
      try {
        return JSON.parse(line) as Record<string, unknown>;
      } catch {
        return { unparsed: line };
      }
    });
}

export const SIGNAL_INVARIANTS = { inFlightAnsweredOnce, shutdownLoggedOnce, repeatsLoggedAndIgnored, exitedAfterDrain, noConnectionAfterShutdown };

/** Every violation a signal case shows, each named by its invariant. */
export function signalViolations(observed: SignalObservation): string[] {
  return Object.entries(SIGNAL_INVARIANTS).flatMap(([name, check]) => check(observed).map((detail) => `${name}: ${detail}`));
}
