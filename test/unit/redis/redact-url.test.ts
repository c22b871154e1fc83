// A Redis URL in a message: neither its password nor any query parameter's value (ioredis reads options, passwords too, from the query).
import { describe, expect, it } from 'vitest';
import { describeRedisSetting, redactRedisUrl, type RedisSettings } from '../../../src/redis/connect.ts';

describe('redactRedisUrl', () => {
  it('masks the password of the userinfo', () => {
    expect(redactRedisUrl('redis://default:s3cret@redis:6379/2')).toBe('redis://default:***@redis:6379/2');
  });

  it('masks the value of every query parameter, a password given there included', () => {
    expect(redactRedisUrl('rediss://redis:6380?password=s3cret&sentinelPassword=t0ken&db=1')).toBe(
      'rediss://redis:6380?password=***&sentinelPassword=***&db=***',
    );
  });

  it('leaves a URL without credentials or query as it is', () => {
    expect(redactRedisUrl('redis://127.0.0.1:6379')).toBe('redis://127.0.0.1:6379');
  });
});

describe('describeRedisSetting', () => {
  it('names REDIS_URL with the URL redacted', () => {
    const settings: RedisSettings = {
      url: 'redis://:s3cret@redis:6379?password=s3cret',
      sentinels: [],
      sentinelName: 'mymaster',
      clusterNodes: [],
      password: null,
      commandTimeoutMs: 1000,
      connectTimeoutMs: 1000,
    };
    expect(describeRedisSetting(settings)).toBe('REDIS_URL (redis.url) redis://:***@redis:6379?password=***');
  });
});
