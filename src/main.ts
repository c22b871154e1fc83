// npm start: the production gateway. Config from config/ and the environment, keys in Redis.
import { createKeyHasher } from './auth/key-hash.ts';
import { loadPepper } from './auth/pepper.ts';
import { composeRedisGateway } from './wiring/compose.ts';
import { loadConfig, shadowedByEnvironment } from './config/load-config.ts';
import { startupFailureMessage } from './startup-failure.ts';
import { systemClock } from './time/clock.ts';
import { createLogDestination } from './observability/log-destination.ts';
import { createLogger } from './observability/logger.ts';
import { tracingFromEnvironment } from './tracing/from-environment.ts';
import { checkBeforeStart } from './wiring/check-config.ts';
import { startedByNpm, watchParent } from './wiring/parent-watch.ts';
import packageJson from '../package.json' with { type: 'json' };

/** Log lines are written in batches of at least this many bytes (and at shutdown). */
const LOG_BATCH_BYTES = 32 * 1024;
const LOG_FLUSH_MS = 1000;
/** On shutdown, the longest the process waits for its log writes to finish. */
const LOG_DRAIN_MS = 2000;
/** A log collector that stops reading must not grow the process without bound: past this, lines are dropped. */
const LOG_BUFFER_MAX_BYTES = 16 * 1024 * 1024;

/** The buffered log destination, flushed on every way out of the process. */
const logStream = createLogDestination({ fd: 1, batchBytes: LOG_BATCH_BYTES, maxBufferedBytes: LOG_BUFFER_MAX_BYTES });

/** How often a gateway run by `npm start` looks whether npm still runs (see watchParent). */
const PARENT_CHECK_MS = 500;

/** What SIGHUP does: nothing until the gateway listens (a configuration read moments ago is the file's). */
let reloadOnHangUp: () => void = () => undefined;

async function main(): Promise<void> {
  // Node's default for SIGHUP ends the process: here it re-reads the configuration (src/wiring/reload.ts),
  // which logs its outcome; a refused reload leaves the running configuration serving. Registered first,
  // so a SIGHUP during start-up does not kill the process.
  process.on('SIGHUP', () => reloadOnHangUp());
  const config = loadConfig();
  // What `npm run config -- validate` and a reload check, by the same code, before anything starts: a file
  // validate passes is one start-up takes, and a bad one stops it with each fault. (The files are read
  // again as the gateway is built: a few small reads, once.)
  await checkBeforeStart(config, { clock: systemClock });
  // Buffered and written asynchronously: a log line costs no write of its own on the request path. The
  // buffer is flushed on shutdown and, synchronously, on a fatal error; a SIGKILL loses what it holds.
  const logger = createLogger(config.logging.level, logStream);
  const clock = systemClock;
  const hashKey = createKeyHasher(loadPepper(config));
  // The OpenTelemetry SDK reads its own standard variables (OTEL_*), not the gateway's configuration.
  const { tracing, summary: tracingSummary } = tracingFromEnvironment(process.env, { name: 'petstore-gateway', version: packageJson.version });
  logger.info(
    { tracing: tracingSummary },
    tracingSummary.exporting ? 'tracing on: spans exported over OTLP' : 'tracing: trace context propagated, no spans exported',
  );

  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection'));
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception: exiting');
    logStream.flushSync();
    process.exit(1);
  });

  // A reload reads the file and the environment again, as start-up did.
  const gateway = await composeRedisGateway({
    config,
    logger,
    clock,
    hashKey,
    tracing,
    reloadConfig: () => loadConfig(),
    shadowedSettings: () => shadowedByEnvironment(),
    readPepper: (next) => loadPepper(next),
  });
  reloadOnHangUp = () => void gateway.reload();
  // At low traffic the buffer would hold lines for long: they are written at least every LOG_FLUSH_MS.
  logStream.flush();
  setInterval(() => logStream.flush(), LOG_FLUSH_MS).unref();

  let stopWatchingNpm: () => void = () => undefined;
  if (startedByNpm(process.env)) {
    // npm passes SIGTERM and SIGINT on to the gateway (`exec` in the start script), not SIGHUP: it dies of it.
    const npmPid = process.ppid;
    logger.info(
      { pid: process.pid, npmPid },
      `run by npm (pid ${npmPid}), which dies of SIGHUP without passing it on: to reload, send SIGHUP to pid ${process.pid} or run npm run config -- reload; under a supervisor, run bin/petstore-gateway`,
    );
    stopWatchingNpm = watchParent({
      parentPid: npmPid,
      currentParent: () => process.ppid,
      everyMs: PARENT_CHECK_MS,
      onGone: () => {
        logger.warn({ npmPid }, `npm (pid ${npmPid}), which ran the gateway, exited: shutting down rather than running on without it`);
        process.kill(process.pid, 'SIGTERM');
      },
    });
  }

  let stopping: string | undefined;
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // `on`, not `once`: a signal to the whole process group (systemd's KillMode=control-group, `kill -- -PGID`, Ctrl-C)
    // reaches the gateway twice under npm, which passes it on; Node's default action for the second would end the drain.
    process.on(signal, () => {
      if (stopping !== undefined) {
        logger.info({ signal, stopping }, `${signal} ignored: the gateway is already draining (SIGKILL ends it at once)`);
        return;
      }
      stopping = signal;
      // npm exits as it passes SIGTERM on: its going is no news then.
      stopWatchingNpm();
      reloadOnHangUp = () => logger.info('SIGHUP ignored: the gateway is shutting down');
      gateway.shutdown(signal).then(
        () => exitAfterLogs(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          return exitAfterLogs(1);
        },
      );
    });
  }
}

/** Exits once every log line is written (waiting LOG_DRAIN_MS at most for a write under way); exits even if writing fails. */
async function exitAfterLogs(code: number): Promise<never> {
  try {
    await logStream.writeAll(LOG_DRAIN_MS);
  } finally {
    process.exit(code);
  }
}

main().catch((error: unknown) => {
  const message = startupFailureMessage(error);
  logStream.flushSync();
  process.stderr.write(`petstore-gateway: could not start: ${message}\n`);
  process.exit(1);
});
