// vitest set-up file of every tier: records the processes each test file starts (test/guard/child-registry.ts).
import { expect } from 'vitest';
import { recordChildren } from './child-registry.ts';

recordChildren(() => expect.getState().testPath ?? 'unknown test file');
