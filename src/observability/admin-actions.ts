// The admin API's audit vocabulary: the actions and results of the audit log line and of admin_actions_total.

/** The changes the audit trail names, and `authenticate` for failed or refused authentications. */
export const ADMIN_ACTIONS = [
  'authenticate',
  'create_key',
  'revoke_key',
  'rotate_key',
  'set_rate_limit',
  'set_opt_in',
  'set_quota',
  'start_brownout',
  'stop_brownout',
  'reload_config',
] as const;
export type AdminAction = (typeof ADMIN_ACTIONS)[number];

/** `refused`: answered 4xx (a bad body, an unknown key, a wrong token); `failed`: the gateway could not do it (5xx). */
export const ADMIN_RESULTS = ['success', 'refused', 'failed'] as const;
export type AdminResult = (typeof ADMIN_RESULTS)[number];
