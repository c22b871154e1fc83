// What one harness case observed, and the violations the invariant checks find in it.
import type { ClientOutcome } from './client-driver.ts';
import type { UpstreamConnection } from './hostile-upstream.ts';
import type { EdgeCase } from './script.ts';
import type { RestWritten } from './sightings.ts';

/**
 * a: an answer carries another request's tag; b: more than one answer per request, or out of order;
 * c: a complete request left unanswered, refused without an Error body, or answered without the
 * Access-Control-Allow-Origin its Origin is owed (or with one it is not); d: the upstream received what
 * no client sent whole and valid, or a key, or an answer with a transfer coding the gateway cannot relay
 * was relayed or its connection reused; e: a hang, a crash, a 500 (answered or only logged as an
 * unexpected error), or a request still in flight; f: the answers' check against the document (contract-invariants.ts): under
 * enforce an answer off it relayed, a refusal that is not one 502 upstream_contract_violation or that closes the client's
 * connection, an upstream connection reused after a head refused, a slow body that reached the client before it was whole;
 * under report and off (and enforce, on the document) an answer not relayed as the upstream wrote it, or (report) not the
 * answer the off twin's client got, or (report, off) a slow body held back until the upstream had written all of it; g: the TLS
 * leg (tls-invariants.ts): a renegotiation the listener went through with, bytes a client sent in the clear answered in the clear,
 * a hostile TLS client (a cut handshake, half a record) that got a byte of HTTP.
 */
export type Invariant = 'a' | 'b' | 'c' | 'd' | 'e' | 'f' | 'g';

export interface Violation {
  invariant: Invariant;
  /** The client concerned, by index. */
  client?: number;
  detail: string;
}

export interface CaseObservation {
  edgeCase: EdgeCase;
  keys: readonly string[];
  clients: ClientOutcome[];
  upstream: UpstreamConnection[];
  /** By tag: for each slow body whose rest was written, whether its client had the first part by then. */
  rests: ReadonlyMap<string, RestWritten>;
  /** The gateway's in-flight gauge once every client was done; undefined when it could not be read. */
  inFlightAfter: number | undefined;
  /** Uncaught exceptions and unhandled rejections during the case. */
  crashes: string[];
  /** The gateway's `unexpected error` log lines during the case. */
  unexpected: string[];
  /**
   * A report case: what the clients and the upstream of its twin showed, the same case run at the same
   * time against a gateway that checks none (contract mode off). Its own state is not judged: off cases are judged on their own.
   */
  twin?: { clients: ClientOutcome[]; upstream: UpstreamConnection[] };
}
