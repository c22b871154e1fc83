// Why the gateway closed a client connection, as counted in connections_evicted_total's `reason` (src/server/connection-cap.ts decides).
/** At the cap (`idle`, `slow_head`, `stalled_answer`), or an answer the client stopped taking (`send_timeout`). */
export const CONNECTION_CLOSINGS = ['idle', 'slow_head', 'stalled_answer', 'send_timeout'] as const;
export type ConnectionClosing = (typeof CONNECTION_CLOSINGS)[number];
