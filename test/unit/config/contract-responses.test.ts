// contractResponses: per environment, CONTRACT_RESPONSES and CONTRACT_RESPONSES_SAMPLE for the running one, checked at start-up.
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';

describe('contractResponses', () => {
  it('enforces in staging and reports a 2% sample in production by default', () => {
    expect(loadConfig({}).contractResponses).toEqual({
      production: { mode: 'report', sample: 0.02 },
      staging: { mode: 'enforce', sample: 1 },
      maxBodyBytes: 262_144,
    });
  });

  it("takes CONTRACT_RESPONSES and CONTRACT_RESPONSES_SAMPLE as the running environment's", () => {
    const config = loadConfig({ GATEWAY_ENVIRONMENT: 'production', CONTRACT_RESPONSES: 'enforce', CONTRACT_RESPONSES_SAMPLE: '0.5' });
    expect(config.contractResponses.production).toEqual({ mode: 'enforce', sample: 0.5 });
    expect(config.contractResponses.staging).toEqual({ mode: 'enforce', sample: 1 });
  });

  it('refuses a mode it does not know, naming the variable and the key', () => {
    expect(() => loadConfig({ GATEWAY_ENVIRONMENT: 'staging', CONTRACT_RESPONSES: 'strict' })).toThrow(
      /CONTRACT_RESPONSES \(contractResponses\.staging\.mode\)/,
    );
  });

  it.each(['-0.1', '1.5', 'most'])('refuses the sample %s', (sample) => {
    expect(() => loadConfig({ CONTRACT_RESPONSES_SAMPLE: sample })).toThrow(/CONTRACT_RESPONSES_SAMPLE \(contractResponses\.staging\.sample\)/);
  });
});
