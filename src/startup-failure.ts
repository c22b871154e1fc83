// What a process says when it cannot start: the one line of a setting the operator got wrong, else the stack.
import { ConfigError } from './config/load-config.ts';
import { SigningKeyError } from './identity/signing-key.ts';
import { ListenError } from './server/server.ts';
import { TracingSettingError } from './tracing/from-environment.ts';
import { ConfigCheckError } from './wiring/check-config.ts';

/**
 * The message for a start-up failure (a failed configuration check: each fault, one a line). A bad setting (the gateway's or an OTEL_* variable), an unreadable key file or a busy port names the
 * setting in its message, and a stack would only bury that line; anything else is a bug, and keeps its stack.
 */
export function startupFailureMessage(error: unknown): string {
  if (
    error instanceof ConfigError ||
    error instanceof ConfigCheckError ||
    error instanceof SigningKeyError ||
    error instanceof ListenError ||
    error instanceof TracingSettingError
  )
    return error.message;
  return error instanceof Error ? (error.stack ?? error.message) : String(error);
}
